# The kernel-activity recorder (CUPTI), compiled into libvramtrace.so with the interpose/
# objects: interpose/CMakeLists.txt includes this file and adds VT_CUPTI_SOURCES to
# vramtrace_objs. Headers only from the CUDA toolkit; libcupti is loaded at run time.
set(VT_CUPTI_DIR ${CMAKE_CURRENT_LIST_DIR})
set(VT_CUPTI_SOURCES
  ${VT_CUPTI_DIR}/activity_encoder.cpp
  ${VT_CUPTI_DIR}/buffer_pool.cpp
  ${VT_CUPTI_DIR}/clock_align.cpp
  ${VT_CUPTI_DIR}/cupti_api.cpp
  ${VT_CUPTI_DIR}/exports.cpp
  ${VT_CUPTI_DIR}/flush_loop.cpp
  ${VT_CUPTI_DIR}/library_search.cpp
  ${VT_CUPTI_DIR}/loader.cpp
  ${VT_CUPTI_DIR}/name_table.cpp
  ${VT_CUPTI_DIR}/nvtx_injection.cpp
  ${VT_CUPTI_DIR}/other_tools.cpp
  ${VT_CUPTI_DIR}/session.cpp
  ${VT_CUPTI_DIR}/status_record.cpp
)
