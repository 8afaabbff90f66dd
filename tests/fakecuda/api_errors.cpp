// api_errors.cpp — cuGetErrorName and cuGetErrorString over every CUresult of CUDA 13
// (error_table.inc). They work before cuInit, as in the real driver.
#include "fc_api.h"

namespace {

struct ErrorText {
  int code;
  const char *name;
  const char *text;
};

const ErrorText kErrors[] = {
#include "error_table.inc"
};

const ErrorText *find(CUresult error) {
  for (const ErrorText &e : kErrors)
    if (e.code == static_cast<int>(error)) return &e;
  return nullptr;
}

}  // namespace

FC_API CUresult cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *e = find(error);
  *pStr = e ? e->name : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FC_API CUresult cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText *e = find(error);
  *pStr = e ? e->text : nullptr;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
