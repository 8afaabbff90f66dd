// selftest.h — what the parts of fakecuda_selftest share: the CHECK macros (print the failed
// check and count it; main() exits 1 if any failed), the device configuration main() sets
// before cuInit, and small helpers. Each part is a function declared at the bottom.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

namespace selftest {

extern std::atomic<int> g_failures;

#define CHECK(cond)                                                           \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
      selftest::g_failures++;                                                 \
    }                                                                         \
  } while (0)

#define CHECK_RC(call, expect)                                                              \
  do {                                                                                      \
    CUresult rc_ = (call);                                                                  \
    if (rc_ != (expect)) {                                                                  \
      fprintf(stderr, "FAIL %s:%d: %s returned %d, expected %s\n", __FILE__, __LINE__, #call, \
              static_cast<int>(rc_), #expect);                                              \
      selftest::g_failures++;                                                               \
    }                                                                                       \
  } while (0)

#define OK(call) CHECK_RC(call, CUDA_SUCCESS)

constexpr size_t MiB = 1ull << 20;
constexpr size_t GiB = 1ull << 30;
// The configuration main() sets before cuInit (2 devices; contexts cost nothing in-process).
constexpr size_t kTotal = 1 * GiB;
constexpr size_t kForeign = 64 * MiB;
constexpr size_t kBaseFree = kTotal - kForeign;

size_t free_mem();                  // cuMemGetInfo of the current context's device
void *lib_sym(const char *name);    // dlsym in the loaded libcuda.so.1
void *proc(const char *name, int version, cuuint64_t flags);  // cuGetProcAddress_v2 (must succeed)
std::string self_path();
// Runs this program again as `--child <args>` with extra environment assignments and file
// descriptors `keep` inherited; returns its exit status (-1 if it could not run).
int run_child(const std::vector<std::string> &args, const std::vector<std::string> &env,
              const std::vector<int> &keep = {});
// The same without waiting: the child's pid (-1 on failure), then its exit status.
int spawn_child(const std::vector<std::string> &args, const std::vector<std::string> &env,
                const std::vector<int> &keep = {});
int wait_child(int pid);
CUmemAllocationProp device_prop(int dev, bool shareable);

// The parts (each its own file).
void test_entry_points();           // selftest_entry_points.cpp
void test_graphs();                 // selftest_graphs.cpp
void test_capture();
void test_vmm_sharing();            // selftest_sharing.cpp
void test_multicast();
void test_pool_ipc();
void test_cross_process();
void test_cuda13_pools();           // selftest_pools.cpp
void test_pool_splitting();
void test_events();
void test_arrays_external();        // selftest_arrays.cpp
void test_context_costs();          // selftest_contexts.cpp
// Child processes (return the exit status): `--child share <fds...>`, `--child contexts <mode>`.
int share_child(char **args);             // selftest_sharing.cpp
int contexts_child(const char *mode);     // selftest_contexts.cpp

}  // namespace selftest
