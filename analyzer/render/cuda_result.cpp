// See cuda_result.h.
#include "cuda_result.h"

#include <algorithm>
#include <iterator>

namespace vt::analyzer {

namespace {

struct Named {
  uint64_t code;
  const char* name;
};
// {code, "NAME"}, sorted by code: generated from cuda.h (cuda_result_names.inc).
constexpr Named kNames[] = {
#include "cuda_result_names.inc"
};

}  // namespace

const char* cuda_result_name(uint64_t code) {
  auto it = std::lower_bound(std::begin(kNames), std::end(kNames), code, [](const Named& n, uint64_t c) { return n.code < c; });
  return it != std::end(kNames) && it->code == code ? it->name : "";
}

std::string cuda_result_text(uint64_t code) {
  const char* n = cuda_result_name(code);
  return *n ? std::string(n) + " (" + std::to_string(code) + ")" : "CUresult " + std::to_string(code);
}

}  // namespace vt::analyzer
