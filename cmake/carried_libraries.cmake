# The shared libraries a portable libvramtrace.so takes with it (VRAMTRACE_PORTABLE): libunwind.so.8
# (Debian's libunwind.a is not position-independent) and the liblzma.so.5 it needs. Copied into
# lib/ beside libvramtrace.so under names of their own, as auditwheel does: libunwind-<hash>.so.8
# and liblzma-<hash>.so.5 (the first 8 hex digits of the file's SHA-256), sonames and libunwind's
# DT_NEEDED changed to match, RUNPATH $ORIGIN. A process's own libunwind or liblzma is then never
# taken for ours, nor ours for its. libvramtrace.so opens the copy with dlopen (its RUNPATH $ORIGIN
# finds it: interpose/stacks/unwinder_library.h). Sets VT_UNWIND_LIBRARY (the name it opens) and writes
# wheel_libraries.txt: the files of lib/ the wheel ships (the wheel's build backend reads it).
find_program(VT_PATCHELF patchelf)
if(NOT VT_PATCHELF)
  message(FATAL_ERROR "VRAMTRACE_PORTABLE needs patchelf to rename the libraries it carries (apt-get install patchelf)")
endif()

function(vt_carry soname out_name)
  find_library(found NAMES ${soname} NO_CACHE)
  if(NOT found)
    message(FATAL_ERROR "VRAMTRACE_PORTABLE: ${soname} not found (libunwind-dev and liblzma-dev install it)")
  endif()
  file(REAL_PATH "${found}" real)
  file(SHA256 "${real}" sum)
  string(SUBSTRING "${sum}" 0 8 short)
  string(REGEX REPLACE "^([^.]+)(\\..*)$" "\\1-${short}\\2" renamed "${soname}")
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
  file(COPY_FILE "${real}" "${CMAKE_BINARY_DIR}/lib/${renamed}")
  # One change per call: patchelf 0.14 given both wrote the RUNPATH's string as the soname.
  execute_process(COMMAND ${VT_PATCHELF} --set-soname ${renamed} "${CMAKE_BINARY_DIR}/lib/${renamed}" COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND ${VT_PATCHELF} --set-rpath "\$ORIGIN" "${CMAKE_BINARY_DIR}/lib/${renamed}" COMMAND_ERROR_IS_FATAL ANY)
  set(${out_name} ${renamed} PARENT_SCOPE)
endfunction()

vt_carry(liblzma.so.5 VT_LZMA_LIBRARY)
vt_carry(libunwind.so.8 VT_UNWIND_LIBRARY)
execute_process(COMMAND ${VT_PATCHELF} --replace-needed liblzma.so.5 ${VT_LZMA_LIBRARY} "${CMAKE_BINARY_DIR}/lib/${VT_UNWIND_LIBRARY}"
                COMMAND_ERROR_IS_FATAL ANY)
file(WRITE ${CMAKE_BINARY_DIR}/wheel_libraries.txt
     "libvramtrace.so\nlibvramtrace_audit.so\n${VT_UNWIND_LIBRARY}\n${VT_LZMA_LIBRARY}\n")
