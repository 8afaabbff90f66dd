/* vramtrace live query API: what vramtrace sees of this process's GPU memory right now, and named
 * regions marked in the trace (memory per region in the reports).
 *
 * The vramtrace_* functions are exported by libvramtrace.so while it is preloaded
 * (`vramtrace run -- prog`, or LD_PRELOAD). Do not link against them: call the vramtrace_api_*
 * inline wrappers below, which look the functions up at run time and answer -1 ("not tracing")
 * when the library is not loaded, so the same program runs with and without vramtrace.
 * Python: ctypes.CDLL(None).vramtrace_live_bytes (AttributeError when not preloaded).
 *
 * Devices are CUDA ordinals. Kinds: 0 device memory (cuMemAlloc, stream-ordered, VMM physical,
 * arrays), 1 managed, 2 pinned host, 3 imported (IPC). The figures follow the report's accounting
 * rules (docs/metrics.md, "Accounting rules"): VMM memory counts until its handle is released and
 * its last mapping unmapped, a stream-ordered allocation on the device of its pool. Devices 16 and
 * above share one figure (ask for any of them). */
#ifndef VRAMTRACE_H
#define VRAMTRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VRAMTRACE_API_VERSION 3 /* 2: vramtrace_trace_path; 3: vramtrace_tensor_bytes, _tensor_peak_bytes */

int vramtrace_api_version(void);              /* VRAMTRACE_API_VERSION */
int vramtrace_active(void);                   /* 1: tracing (or ready to on the first CUDA call), 0: off */
int64_t vramtrace_live_bytes(int device);     /* live device memory (-1: all devices); -1 when not tracing */
int64_t vramtrace_live_bytes_kind(int device, int kind);
int64_t vramtrace_peak_bytes(int device);     /* highest device memory since start or the last reset
                                                 (device -1: the highest device). Exact while one
                                                 thread allocates and after any reset; with several
                                                 allocating threads and no reset yet, the highest of
                                                 the figures sampled at each query and every 250 ms */
int vramtrace_reset_peak(int device);         /* device -1: all; 0 ok, -1 not tracing. Also makes the
                                                 peak exact for the rest of the run (every thread's
                                                 count then goes through one shared counter), and
                                                 resets the tensor peak below */
/* PyTorch's allocated bytes (torch.cuda.memory_allocated: its live tensors' blocks) as of its latest
 * block, and the highest since the start or the last vramtrace_reset_peak (device -1: all devices
 * summed; the highest device for the peak). Exact: PyTorch reports its own totals with every block.
 * -1 when not tracing or before PyTorch's first block (or when its block layer is off). */
int64_t vramtrace_tensor_bytes(int device);
int64_t vramtrace_tensor_peak_bytes(int device);
int vramtrace_region_begin(const char* name); /* 0 ok, -1 not tracing */
int vramtrace_region_end(const char* name);
/* The trace file this process writes: its length, the path copied into out (cut to cap - 1 bytes);
 * -1 before the trace opens (the first CUDA memory call) or when tracing is off. */
int vramtrace_trace_path(char* out, size_t cap);
/* Python: compare the GIL-free frame walker with CPython's own API (call with the GIL held, e.g.
 * ctypes.PyDLL(None).vramtrace_python_self_test()). 1 matched; 0 mismatch (walker turned off) or
 * not applicable. */
int vramtrace_python_self_test(void);

#ifdef __cplusplus
}
#endif

/* Run-time lookup, so that programs do not need libvramtrace.so at link or load time. */
#if defined(__unix__) && !defined(VRAMTRACE_NO_INLINE_API)
#include <dlfcn.h>
static inline void* vramtrace_api_sym_(const char* name) { return dlsym(RTLD_DEFAULT, name); }
static inline int vramtrace_api_active(void) {
  int (*f)(void) = (int (*)(void))vramtrace_api_sym_("vramtrace_active");
  return f ? f() : -1;
}
static inline int64_t vramtrace_api_live_bytes(int device) {
  int64_t (*f)(int) = (int64_t(*)(int))vramtrace_api_sym_("vramtrace_live_bytes");
  return f ? f(device) : -1;
}
static inline int64_t vramtrace_api_peak_bytes(int device) {
  int64_t (*f)(int) = (int64_t(*)(int))vramtrace_api_sym_("vramtrace_peak_bytes");
  return f ? f(device) : -1;
}
static inline int vramtrace_api_reset_peak(int device) {
  int (*f)(int) = (int (*)(int))vramtrace_api_sym_("vramtrace_reset_peak");
  return f ? f(device) : -1;
}
static inline int64_t vramtrace_api_tensor_bytes(int device) {
  int64_t (*f)(int) = (int64_t(*)(int))vramtrace_api_sym_("vramtrace_tensor_bytes");
  return f ? f(device) : -1;
}
static inline int64_t vramtrace_api_tensor_peak_bytes(int device) {
  int64_t (*f)(int) = (int64_t(*)(int))vramtrace_api_sym_("vramtrace_tensor_peak_bytes");
  return f ? f(device) : -1;
}
static inline int vramtrace_api_region_begin(const char* name) {
  int (*f)(const char*) = (int (*)(const char*))vramtrace_api_sym_("vramtrace_region_begin");
  return f ? f(name) : -1;
}
static inline int vramtrace_api_region_end(const char* name) {
  int (*f)(const char*) = (int (*)(const char*))vramtrace_api_sym_("vramtrace_region_end");
  return f ? f(name) : -1;
}
static inline int vramtrace_api_trace_path(char* out, size_t cap) {
  int (*f)(char*, size_t) = (int (*)(char*, size_t))vramtrace_api_sym_("vramtrace_trace_path");
  return f ? f(out, cap) : -1;
}
#endif

#endif /* VRAMTRACE_H */
