# What `cmake --install` puts beside the CLI, the library and the header with its CMake package
# and .pc file (those are installed by their own directories): the man page and the bash/zsh
# completions, generated from the CLI's own definition (cmake/cli_docs.cmake), and the pytest
# plugin with the entry point that makes pytest load it. tests/packaging/install_test.sh checks the tree.

set(VT_SHARE_OUT ${CMAKE_BINARY_DIR}/share)
set(VT_DOCS_FILES ${VT_SHARE_OUT}/man/man1/vramtrace.1 ${VT_SHARE_OUT}/bash-completion/completions/vramtrace
                  ${VT_SHARE_OUT}/zsh/site-functions/_vramtrace)
add_custom_command(OUTPUT ${VT_DOCS_FILES}
  COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:vramtrace_cli> -DOUT=${VT_SHARE_OUT} -P ${PROJECT_SOURCE_DIR}/cmake/cli_docs.cmake
  DEPENDS vramtrace_cli ${PROJECT_SOURCE_DIR}/cmake/cli_docs.cmake
  COMMENT "man page and shell completions from the CLI's definition" VERBATIM)
add_custom_target(vramtrace_cli_docs ALL DEPENDS ${VT_DOCS_FILES})
install(FILES ${VT_SHARE_OUT}/man/man1/vramtrace.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${VT_SHARE_OUT}/bash-completion/completions/vramtrace DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES ${VT_SHARE_OUT}/zsh/site-functions/_vramtrace DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/site-functions)

# The pytest plugin: <prefix>/lib/pythonX.Y/site-packages (PYTHONPATH it there, or set
# VRAMTRACE_PYTHON_SITE), with a dist-info whose entry point has pytest load it without `-p`.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND AND NOT VRAMTRACE_PYTHON_SITE)
  set(VRAMTRACE_PYTHON_SITE lib/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/site-packages)
endif()
set(VRAMTRACE_PYTHON_SITE "${VRAMTRACE_PYTHON_SITE}" CACHE STRING "where cmake --install puts the pytest plugin, under the prefix")
if(VRAMTRACE_PYTHON_SITE)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/pytest_plugin/pytest_vramtrace DESTINATION ${VRAMTRACE_PYTHON_SITE}
          PATTERN __pycache__ EXCLUDE)
  set(VT_DIST_INFO ${CMAKE_BINARY_DIR}/pytest_vramtrace-${PROJECT_VERSION}.dist-info)
  file(WRITE ${VT_DIST_INFO}/METADATA "Metadata-Version: 2.1\nName: pytest-vramtrace\nVersion: ${PROJECT_VERSION}\n")
  file(WRITE ${VT_DIST_INFO}/entry_points.txt "[pytest11]\nvramtrace = pytest_vramtrace\n")
  file(WRITE ${VT_DIST_INFO}/top_level.txt "pytest_vramtrace\n")
  install(DIRECTORY ${VT_DIST_INFO} DESTINATION ${VRAMTRACE_PYTHON_SITE})
endif()
