// See current_stream.h.
#include "current_stream.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "loaded_symbol.h"

namespace vt {

namespace {

// c10::cuda::CUDAStream (c10/cuda/CUDAStream.h): a c10::Stream, {Device (2 bytes), StreamId
// (int64)}, 16 bytes and trivially copyable, so the Itanium x86-64 ABI returns it in rax:rdx,
// as it returns this struct of two integers. stream() takes it by `this`.
struct CudaStreamValue {
  uint64_t device_word, id;
};
static_assert(sizeof(CudaStreamValue) == 16);
using GetCurrentFn = CudaStreamValue (*)(int);  // DeviceIndex (int8_t or int16_t) widened: a register either way
using StreamOfFn = void* (*)(const CudaStreamValue*);

// DeviceIndex is int8_t since PyTorch 2.2 ("a" in the mangled name), int16_t before ("s").
constexpr const char* kGetCurrentNames[] = {"_ZN3c104cuda20getCurrentCUDAStreamEa",
                                            "_ZN3c104cuda20getCurrentCUDAStreamEs"};
constexpr const char* kStreamOfName = "_ZNK3c104cuda10CUDAStream6streamEv";

// Set once by the thread that resolves (the acquire pairs with its release): other threads' blocks
// may arrive meanwhile and see nullptr (stream 0).
std::atomic<GetCurrentFn> g_get_current{nullptr};
StreamOfFn g_stream_of = nullptr;

}  // namespace

bool resolve_current_stream(const void* skip) {
#if !defined(__x86_64__)
  (void)skip;
  return false;
#else
  const char* env = getenv("VRAMTRACE_TORCH_REQUESTS");
  if (env && strcmp(env, "0") == 0) return false;
  void* get = nullptr;
  for (const char* name : kGetCurrentNames)
    if (!get) get = find_loaded_symbol(name, skip, nullptr);
  void* of = find_loaded_symbol(kStreamOfName, skip, nullptr);
  if (!get || !of) return false;
  g_stream_of = reinterpret_cast<StreamOfFn>(of);
  g_get_current.store(reinterpret_cast<GetCurrentFn>(get), std::memory_order_release);
  return true;
#endif
}

uint64_t current_stream(int device) {
  GetCurrentFn get = g_get_current.load(std::memory_order_acquire);
  if (!get) return 0;
  CudaStreamValue s = get(device);
  return reinterpret_cast<uint64_t>(g_stream_of(&s));
}

}  // namespace vt
