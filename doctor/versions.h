// CUDA version arithmetic and vocabulary: the integer encodings (driver/runtime 12040 = 12.4,
// CUPTI's API numbers), version numbers hidden in library file names, and what a cuInit or
// NVML error means for the person at the keyboard.
#pragma once

#include <cstdint>
#include <string>

namespace vt::doctor {

// 12040 -> "12.4", 13000 -> "13.0"; "" for 0 or less.
std::string cuda_version_string(int v);
inline int cuda_major(int v) { return v / 1000; }
// "12.4" / "12.4.127" / "12" -> 12040 / 12040 / 12000; 0 when unreadable.
int parse_cuda_version(const std::string& s);

// The CUDA release a CUPTI API version (cuptiGetVersion) belongs to, as 12060 etc.; 0 if unknown.
// Up to CUDA 12.9 the API version is a small counter; from CUDA 13 it is xxyyzz.
int cupti_api_to_cuda(uint32_t api);

// The version in a library file name: libcudart.so.12 -> 12000, libcudart.so.11.0 -> 11000,
// libcudart-9c3f1a.so.12.4.127 -> 12040; 0 when the name carries none.
int version_from_file_name(const std::string& file_name);

// What to do about a failed cuInit (CUresult as an int), for the advice line.
std::string cu_init_advice(int result);
std::string nvml_init_advice(int result);

}  // namespace vt::doctor

namespace vt::doctor {

// The oldest Linux driver branch that supports a CUDA release fully, e.g. 12040 -> "R550";
// "" when unknown (newer than this table).
std::string driver_branch_for(int cuda_version);

}  // namespace vt::doctor
