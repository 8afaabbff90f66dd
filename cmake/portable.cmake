# VRAMTRACE_PORTABLE: binaries that run on another distribution than the one that built them (the
# GPU machine is often another one): what `pip wheel .` builds (wheel/backend/cmake_build.py) and
# tests/packaging checks.
#   - the CLI links libstdc++, Abseil and elfutils (with zlib, liblzma, libbz2) statically and
#     needs only glibc and libgcc_s.so.1 (which glibc itself loads for thread cancellation);
#     libgcc stays shared because its static unwinder calls _dl_find_object (glibc 2.35);
#   - libvramtrace.so needs glibc; it opens libunwind at run time (RTLD_LOCAL): the copy carried
#     beside it under a name of its own, with liblzma (cmake/carried_libraries.cmake).
# Nothing here may use a glibc symbol newer than 2.34 (tests/packaging/binary_rules.sh checks the
# symbol versions): no std::random_device (libstdc++'s calls arc4random, 2.36; the static
# libstdc++ still links it in, so tools/glibc_compat.cpp defines arc4random from getrandom).
# Off by default (the wheel's build backend turns it on); sanitized builds never are (the sanitizers' runtimes
# want the shared libstdc++).
option(VRAMTRACE_PORTABLE "Link the CLI statically (glibc and libgcc_s only) and give libvramtrace.so RUNPATH $ORIGIN" OFF)
if(VRAMTRACE_PORTABLE AND VRAMTRACE_SANITIZE)
  message(FATAL_ERROR "VRAMTRACE_PORTABLE and VRAMTRACE_SANITIZE do not go together")
endif()

# elfutils for the analyzer: the pkg-config targets by default, their static archives when portable.
set(VT_ELFUTILS_LIBS PkgConfig::LIBDW PkgConfig::LIBELF)
if(VRAMTRACE_PORTABLE)
  include(${CMAKE_CURRENT_LIST_DIR}/carried_libraries.cmake)
  set(VT_ELFUTILS_LIBS "")
  foreach(lib dw elf z lzma bz2)
    find_library(VT_STATIC_${lib} NAMES lib${lib}.a REQUIRED)
    list(APPEND VT_ELFUTILS_LIBS ${VT_STATIC_${lib}})
  endforeach()

  # Abseil: each imported absl:: target points at its static archive beside the shared one.
  get_property(vt_imported DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTY IMPORTED_TARGETS)
  foreach(t IN LISTS vt_imported)
    if(NOT t MATCHES "^absl::")
      continue()
    endif()
    get_target_property(type ${t} TYPE)
    if(NOT type STREQUAL "SHARED_LIBRARY")
      continue()
    endif()
    get_target_property(configs ${t} IMPORTED_CONFIGURATIONS)
    foreach(c IN LISTS configs)
      get_target_property(so ${t} IMPORTED_LOCATION_${c})
      string(REGEX REPLACE "\\.so[.0-9]*$" ".a" archive "${so}")
      if(NOT EXISTS "${archive}")
        message(FATAL_ERROR "VRAMTRACE_PORTABLE: no static Abseil for ${t} (${archive}); install libabsl-dev")
      endif()
      set_target_properties(${t} PROPERTIES IMPORTED_LOCATION_${c} "${archive}" IMPORTED_NO_SONAME TRUE)
    endforeach()
  endforeach()
endif()

# After the targets exist (called at the end of the top CMakeLists).
function(vt_make_portable)
  if(NOT VRAMTRACE_PORTABLE)
    return()
  endif()
  target_link_options(vramtrace_cli PRIVATE -static-libstdc++)
  target_sources(vramtrace_cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/glibc_compat.cpp)  # arc4random (2.36)
  set_target_properties(vramtrace PROPERTIES BUILD_RPATH "\$ORIGIN" INSTALL_RPATH "\$ORIGIN")
endfunction()
