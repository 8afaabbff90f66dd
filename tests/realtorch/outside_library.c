/* A library of the traced program that takes device memory from the driver itself, outside
 * PyTorch's allocator (as NCCL, a custom CUDA extension or cuda-python do): the workload
 * oom_outside.py loads it with ctypes. It finds the driver already loaded (libcuda.so.1) and uses
 * the primary context PyTorch made current, so it needs no CUDA header. */
#include <dlfcn.h>
#include <stddef.h>

typedef int (*mem_alloc_fn)(unsigned long long *, size_t);

__attribute__((visibility("default"))) int vt_outside_reserve(size_t bytes) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  mem_alloc_fn alloc = cuda ? (mem_alloc_fn)dlsym(cuda, "cuMemAlloc_v2") : NULL;
  unsigned long long p = 0;
  return alloc && alloc(&p, bytes) == 0 ? 0 : -1;
}
