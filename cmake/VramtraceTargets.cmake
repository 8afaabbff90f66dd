# How vramtrace's targets are compiled: code injected into traced programs (libvramtrace.so and
# everything it links) versus code that runs in our own tools.

# Injected code: no exceptions, no RTTI, hidden symbols (exports.map decides what leaves the
# library), initial-exec TLS (no __tls_get_addr on the hook path). Never sanitized.
function(vt_injected target)
  target_compile_options(${target} PRIVATE -fvisibility=hidden -fvisibility-inlines-hidden
    $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti -ftls-model=initial-exec>)
endfunction()

# Tools-side code: VRAMTRACE_SANITIZE's sanitizers, compiled in and required at link time by
# whatever links it (INTERFACE for libraries).
function(vt_sanitized target)
  if(NOT VRAMTRACE_SANITIZE)
    return()
  endif()
  set(flags -fsanitize=${VRAMTRACE_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  get_target_property(type ${target} TYPE)
  target_compile_options(${target} PRIVATE ${flags})
  if(type STREQUAL "EXECUTABLE" OR type STREQUAL "SHARED_LIBRARY")
    target_link_options(${target} PRIVATE ${flags})
  else()
    target_link_options(${target} INTERFACE ${flags})
  endif()
endfunction()

# Code both sides link (common_core, format) is built twice from the same sources: NAME for the
# tools (sanitized when asked) and NAME_injected for libvramtrace.so. Both are static libraries
# (only what is referenced is linked) with the same include directory and links.
#   vt_dual_library(NAME SOURCES a.cpp ... INCLUDE dir LINK lib ... INJECTED_LINK lib ...)
function(vt_dual_library name)
  cmake_parse_arguments(A "" "INCLUDE" "SOURCES;LINK;INJECTED_LINK" ${ARGN})
  add_library(${name} STATIC ${A_SOURCES})
  add_library(${name}_injected STATIC ${A_SOURCES})
  foreach(t ${name} ${name}_injected)
    target_include_directories(${t} PUBLIC ${A_INCLUDE})
  endforeach()
  target_link_libraries(${name} PUBLIC ${A_LINK})
  target_link_libraries(${name}_injected PUBLIC ${A_INJECTED_LINK})
  vt_sanitized(${name})
  vt_injected(${name}_injected)
endfunction()
