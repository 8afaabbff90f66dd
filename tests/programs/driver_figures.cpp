// Prints the memory figures the simulated driver's model assumes, measured on whatever
// libcuda.so.1 the loader finds: on a GPU machine the real driver (run it there to check the
// model: tests/fakecuda/README.md), in the build the simulator (LD_LIBRARY_PATH=build/lib/fakecuda).
// One "name bytes" line each; every figure is the change of cuMemGetInfo's free memory (or a
// pool / graph attribute) around one operation:
//   context           a second context created with cuCtxCreate
//   alloc_1k_first    the first 1 KiB cuMemAlloc      alloc_1k_second  the next one
//   alloc_3m          a 3 MiB cuMemAlloc              stack_2k         cuCtxSetLimit(STACK_SIZE, 2048)
//   pool_1k_reserved  RESERVED_MEM_CURRENT of the default pool after a 1 KiB cuMemAllocAsync
//   pool_after_sync   the same after its free and a synchronize (release threshold 0: all back)
//   pool_kept_at_max_threshold  the same with the threshold at its maximum (rule 15: all kept)
//   pool_1000_used    USED_MEM_CURRENT of the default pool after a 1000-byte cuMemAllocAsync
//                     (512-byte rounding)
//   pool_split_used / pool_split_reserved  USED_MEM_CURRENT and RESERVED_MEM_CURRENT after a
//                     16 MiB allocation freed (the pool keeping it) and a 4 MiB one (a pool that
//                     splits: 4 MiB used of 16 MiB reserved; one that does not: 16 of 16)
//   graph_instantiate / graph_upload / graph_launch / graph_trim   a graph with a 3 MiB
//                     allocation node and its free node, at each step (trim: memory given back)
//   vmm_granularity   cuMemGetAllocationGranularity (recommended)
//   multicast_granularity  cuMulticastGetGranularity (recommended; -1 without multicast)
// With --check, the figures must be the simulator's with its defaults (exit 1 otherwise).
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

namespace {

void* lib = nullptr;
template <typename F>
F fn(const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "driver_figures: no %s in libcuda.so.1\n", name);
    exit(2);
  }
  return reinterpret_cast<F>(p);
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc > 1 && strcmp(argv[1], "--check") == 0;
  lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "driver_figures: %s\n", dlerror());
    return 2;
  }
  auto init = fn<CUresult (*)(unsigned)>("cuInit");
  auto ctx_create = fn<CUresult (*)(CUcontext*, CUctxCreateParams*, unsigned, CUdevice)>("cuCtxCreate_v4");
  auto ctx_destroy = fn<CUresult (*)(CUcontext)>("cuCtxDestroy_v2");
  auto ctx_set = fn<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  auto set_limit = fn<CUresult (*)(CUlimit, size_t)>("cuCtxSetLimit");
  auto mem_info = fn<CUresult (*)(size_t*, size_t*)>("cuMemGetInfo_v2");
  auto mem_alloc = fn<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc_v2");
  auto mem_free = fn<CUresult (*)(CUdeviceptr)>("cuMemFree_v2");
  auto alloc_async = fn<CUresult (*)(CUdeviceptr*, size_t, CUstream)>("cuMemAllocAsync");
  auto free_async = fn<CUresult (*)(CUdeviceptr, CUstream)>("cuMemFreeAsync");
  auto default_pool = fn<CUresult (*)(CUmemoryPool*, CUdevice)>("cuDeviceGetDefaultMemPool");
  auto pool_attr = fn<CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*)>("cuMemPoolGetAttribute");
  auto pool_set_attr = fn<CUresult (*)(CUmemoryPool, CUmemPool_attribute, void*)>("cuMemPoolSetAttribute");
  auto sync = fn<CUresult (*)(CUstream)>("cuStreamSynchronize");
  auto graph_create = fn<CUresult (*)(CUgraph*, unsigned)>("cuGraphCreate");
  auto add_alloc = fn<CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUDA_MEM_ALLOC_NODE_PARAMS*)>(
      "cuGraphAddMemAllocNode");
  auto add_free = fn<CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUdeviceptr)>("cuGraphAddMemFreeNode");
  auto instantiate = fn<CUresult (*)(CUgraphExec*, CUgraph, unsigned long long)>("cuGraphInstantiateWithFlags");
  auto upload = fn<CUresult (*)(CUgraphExec, CUstream)>("cuGraphUpload");
  auto launch = fn<CUresult (*)(CUgraphExec, CUstream)>("cuGraphLaunch");
  auto exec_destroy = fn<CUresult (*)(CUgraphExec)>("cuGraphExecDestroy");
  auto graph_destroy = fn<CUresult (*)(CUgraph)>("cuGraphDestroy");
  auto trim = fn<CUresult (*)(CUdevice)>("cuDeviceGraphMemTrim");
  auto granularity = fn<CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
      "cuMemGetAllocationGranularity");
  auto mc_granularity = fn<CUresult (*)(size_t*, const CUmulticastObjectProp*, CUmulticastGranularity_flags)>(
      "cuMulticastGetGranularity");

  if (init(0)) return 2;
  std::map<std::string, long long> fig;
  auto free_now = [&] {
    size_t f = 0, t = 0;
    mem_info(&f, &t);
    return static_cast<long long>(f);
  };
  CUcontext a = nullptr, b = nullptr;
  if (ctx_create(&a, nullptr, 0, 0)) return 2;
  long long f0 = free_now();
  if (ctx_create(&b, nullptr, 0, 0)) return 2;
  fig["context"] = f0 - free_now();
  ctx_destroy(b);
  ctx_set(a);

  CUdeviceptr p1 = 0, p2 = 0, p3 = 0;
  f0 = free_now();
  mem_alloc(&p1, 1024);
  long long f1 = free_now();
  mem_alloc(&p2, 1024);
  long long f2 = free_now();
  mem_alloc(&p3, 3 << 20);
  fig["alloc_1k_first"] = f0 - f1;
  fig["alloc_1k_second"] = f1 - f2;
  fig["alloc_3m"] = f2 - free_now();
  mem_free(p3);
  mem_free(p2);
  mem_free(p1);

  f0 = free_now();
  if (set_limit(CU_LIMIT_STACK_SIZE, 2048) == CUDA_SUCCESS) {
    fig["stack_2k"] = f0 - free_now();
    set_limit(CU_LIMIT_STACK_SIZE, 1024);
  }

  CUmemoryPool pool = nullptr;
  default_pool(&pool, 0);
  alloc_async(&p1, 1024, nullptr);
  cuuint64_t reserved = 0;
  pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  fig["pool_1k_reserved"] = static_cast<long long>(reserved);
  free_async(p1, nullptr);
  sync(nullptr);
  // Rule 15 (format/accounting.h): at a synchronize a pool keeps at most its release threshold.
  reserved = ~cuuint64_t(0);
  pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  fig["pool_after_sync"] = static_cast<long long>(reserved);  // threshold 0 (the default)
  cuuint64_t keep_all = ~cuuint64_t(0), zero = 0;
  if (pool_set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all) == CUDA_SUCCESS) {
    alloc_async(&p1, 1024, nullptr);
    free_async(p1, nullptr);
    sync(nullptr);
    reserved = 0;
    pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
    fig["pool_kept_at_max_threshold"] = static_cast<long long>(reserved);
    pool_set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero);
    sync(nullptr);  // empty again; then kept across synchronizes
    pool_set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all);
    alloc_async(&p1, 16 << 20, nullptr);
    free_async(p1, nullptr);
    sync(nullptr);
    alloc_async(&p1, 4 << 20, nullptr);
    cuuint64_t used = 0;
    reserved = 0;
    pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
    pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
    fig["pool_split_used"] = static_cast<long long>(used);
    fig["pool_split_reserved"] = static_cast<long long>(reserved);
    free_async(p1, nullptr);
    alloc_async(&p1, 1000, nullptr);
    used = 0;
    pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
    fig["pool_1000_used"] = static_cast<long long>(used);
    free_async(p1, nullptr);
    pool_set_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero);
    sync(nullptr);
  }

  CUgraph g = nullptr;
  CUgraphNode an = nullptr, fnode = nullptr;
  CUDA_MEM_ALLOC_NODE_PARAMS ap;
  memset(&ap, 0, sizeof ap);
  ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ap.bytesize = 3 << 20;
  CUgraphExec exec = nullptr;
  if (!graph_create(&g, 0) && !add_alloc(&an, g, nullptr, 0, &ap) && !add_free(&fnode, g, &an, 1, ap.dptr)) {
    f0 = free_now();
    instantiate(&exec, g, 0);
    f1 = free_now();
    upload(exec, nullptr);
    f2 = free_now();
    launch(exec, nullptr);
    sync(nullptr);
    long long f3 = free_now();
    exec_destroy(exec);
    graph_destroy(g);
    trim(0);
    fig["graph_instantiate"] = f0 - f1;
    fig["graph_upload"] = f1 - f2;
    fig["graph_launch"] = f2 - f3;
    fig["graph_trim"] = free_now() - f3;
  }

  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  size_t gran = 0;
  granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  fig["vmm_granularity"] = static_cast<long long>(gran);
  CUmulticastObjectProp mp;
  memset(&mp, 0, sizeof mp);
  mp.numDevices = 1;
  mp.size = 2 << 20;
  gran = 0;
  fig["multicast_granularity"] =
      mc_granularity(&gran, &mp, CU_MULTICAST_GRANULARITY_RECOMMENDED) ? -1 : static_cast<long long>(gran);
  ctx_destroy(a);

  for (const auto& [name, value] : fig) printf("%s %lld\n", name.c_str(), value);
  if (!check) return 0;
  const long long MiB = 1 << 20;
  const std::map<std::string, long long> model = {
      {"context", 512 * MiB}, {"alloc_1k_first", 2 * MiB}, {"alloc_1k_second", 0}, {"alloc_3m", 4 * MiB},
      {"stack_2k", 264 * MiB}, {"pool_1k_reserved", 2 * MiB}, {"pool_after_sync", 0},
      {"pool_kept_at_max_threshold", 2 * MiB}, {"pool_1000_used", 1024}, {"pool_split_used", 4 * MiB},
      {"pool_split_reserved", 16 * MiB}, {"graph_instantiate", 0}, {"graph_upload", 4 * MiB},
      {"graph_launch", 0}, {"graph_trim", 4 * MiB}, {"vmm_granularity", 2 * MiB}, {"multicast_granularity", 512 * MiB}};
  int bad = 0;
  for (const auto& [name, want] : model) {
    auto it = fig.find(name);
    if (it == fig.end() || it->second != want) {
      fprintf(stderr, "driver_figures: %s is %lld, the model says %lld\n", name.c_str(),
              it == fig.end() ? -1 : it->second, want);
      bad++;
    }
  }
  return bad ? 1 : 0;
}
