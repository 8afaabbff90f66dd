// CUresult codes as people read them: "CUDA_ERROR_OUT_OF_MEMORY (2)", not "CUresult 2". The
// names are those of the CUresult enum in the toolkit's cuda.h, read when the analyzer is built
// (analyzer/CMakeLists.txt generates the table), so a code the toolkit knows is never a number.
#pragma once

#include <cstdint>
#include <string>

namespace vt::analyzer {

// "CUDA_ERROR_OUT_OF_MEMORY", or "" for a code cuda.h does not name.
const char* cuda_result_name(uint64_t code);
// "CUDA_ERROR_OUT_OF_MEMORY (2)", or "CUresult 12345" for a code cuda.h does not name.
std::string cuda_result_text(uint64_t code);

}  // namespace vt::analyzer
