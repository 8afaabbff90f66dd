// CUresult names come from the toolkit's cuda.h (generated at configure time): every code the
// enum names has its name, and an unnamed one stays a number.
#include <catch2/catch.hpp>

#include <cuda.h>

#include "cuda_result.h"

using vt::analyzer::cuda_result_name;
using vt::analyzer::cuda_result_text;

TEST_CASE("CUresult names: as cuda.h spells them, with the number, unknown codes stay numbers") {
  CHECK(std::string(cuda_result_name(CUDA_SUCCESS)) == "CUDA_SUCCESS");
  CHECK(std::string(cuda_result_name(CUDA_ERROR_OUT_OF_MEMORY)) == "CUDA_ERROR_OUT_OF_MEMORY");
  CHECK(std::string(cuda_result_name(CUDA_ERROR_NOT_SUPPORTED)) == "CUDA_ERROR_NOT_SUPPORTED");
  CHECK(std::string(cuda_result_name(CUDA_ERROR_UNKNOWN)) == "CUDA_ERROR_UNKNOWN");
  CHECK(cuda_result_text(2) == "CUDA_ERROR_OUT_OF_MEMORY (2)");
  CHECK(cuda_result_text(12345) == "CUresult 12345");
  CHECK(std::string(cuda_result_name(12345)).empty());
  // The driver's own names agree for a spread of codes.
  for (CUresult r : {CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_INVALID_CONTEXT,
                     CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH})
    CHECK(std::string(cuda_result_name(r)).rfind("CUDA_ERROR_", 0) == 0);
}
