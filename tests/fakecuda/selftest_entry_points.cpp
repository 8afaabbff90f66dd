// selftest_entry_points.cpp — every variant of the toolkit's PFN typedefs (the generated
// entry_points.inc) is exported under its driver name, handed out by cuGetProcAddress for its
// base name, version and flags, and has an address of its own; what is not modelled answers
// CUDA_ERROR_NOT_SUPPORTED.
#include "selftest.h"

#include <cstring>
#include <set>

namespace selftest {
namespace {

struct Variant {
  const char *base;
  int version;
  int per_thread;
  const char *symbol;
};

const Variant kVariants[] = {
#define FC_ENTRY(base, version, per_thread, symbol, pfn, params) {#base, version, per_thread, #symbol},
#include "entry_points.inc"
#include "entry_points_interop.inc"
#undef FC_ENTRY
};

}  // namespace

void test_entry_points() {
  const size_t n = sizeof kVariants / sizeof kVariants[0];
  CHECK(n >= 650);  // CUDA 13.0: 672
  std::set<void *> addresses;
  for (const Variant &v : kVariants) {
    void *exported = lib_sym(v.symbol);
    void *fn = nullptr;
    CUdriverProcAddressQueryResult st;
    CUresult r = cuGetProcAddress_v2(v.base, &fn, v.version, v.per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0,
                                     &st);
    if (!exported || r != CUDA_SUCCESS || fn != exported) {
      fprintf(stderr, "FAIL entry point %s (%s at %d, per-thread %d): exported %p, lookup %d -> %p\n", v.symbol, v.base,
              v.version, v.per_thread, exported, static_cast<int>(r), fn);
      g_failures++;
    }
    addresses.insert(exported);
  }
  CHECK(addresses.size() == n);  // tracers substitute hooks by address: no two names may share one

  // Unmodelled entry points exist and refuse, whatever their family.
  auto memcpy_htod = reinterpret_cast<PFN_cuMemcpyHtoD_v3020>(proc("cuMemcpyHtoD", 13000, 0));
  if (memcpy_htod) CHECK_RC(memcpy_htod(0, nullptr, 0), CUDA_ERROR_NOT_SUPPORTED);
  auto memcpy_ptds = reinterpret_cast<PFN_cuMemcpyHtoD_v7000_ptds>(proc("cuMemcpyHtoD", 13000, 2));
  CHECK(memcpy_ptds && reinterpret_cast<void *>(memcpy_ptds) == lib_sym("cuMemcpyHtoD_v2_ptds"));
  auto gl_init = reinterpret_cast<CUresult (*)()>(proc("cuGLInit", 13000, 0));
  if (gl_init) CHECK_RC(gl_init(), CUDA_ERROR_NOT_SUPPORTED);
  auto launch = reinterpret_cast<PFN_cuLaunchKernel_v4000>(proc("cuLaunchKernel", 13000, 0));
  if (launch) CHECK_RC(launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  // Windows-only names are not there, as on the Linux driver.
  void *fn = reinterpret_cast<void *>(1);
  CHECK_RC(cuGetProcAddress_v2("cuWGLGetDevice", &fn, 13000, 0, nullptr), CUDA_ERROR_NOT_FOUND);
  CHECK(lib_sym("cuWGLGetDevice") == nullptr);
}

}  // namespace selftest
