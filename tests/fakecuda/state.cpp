// state.cpp — the state singleton, handle values, context lookup and the physical
// accounting shared by every entry-point file.
#include "state.h"

#include <pthread.h>

#include <atomic>
#include <cstring>

#include "config.h"

namespace fc {

void DriverMutex::lock() {
  static const bool signal_safe = config().signal_safe;
  if (!signal_safe) return mu_.lock();
  sigset_t all, old;
  sigfillset(&all);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigdelset(&all, sig);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  mu_.lock();
  saved_ = old;
}

void DriverMutex::unlock() {
  static const bool signal_safe = config().signal_safe;
  if (!signal_safe) return mu_.unlock();
  sigset_t old = saved_;
  mu_.unlock();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void maybe_raise(const char *entry_point) {
  const Config &c = config();
  if (c.raise_every <= 0 || c.raise_in != entry_point) return;
  static std::atomic<long> calls{0};
  if ((calls.fetch_add(1) + 1) % c.raise_every == 0) raise(SIGUSR1);
}

State &state() {
  // Never destroyed: libraries unloaded after us may still call in from destructors.
  static State *s = [] {
    State *p = new State();
    // A fork() while another thread holds the lock must not leave the child deadlocked.
    pthread_atfork([] { state().mu.lock(); }, [] { state().mu.unlock(); },
                   [] { state().mu.unlock(); });
    return p;
  }();
  return *s;
}

uint64_t new_handle(State &s, unsigned kind) {
  return (uint64_t(kind) << 40) | (s.next_id++ << 4);
}

CUresult require_init(const State &s) {
  return s.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult lookup_ctx(State &s, CUcontext ctx) {
  auto it = s.ctxs.find(ctx);
  if (it == s.ctxs.end()) return CUDA_ERROR_INVALID_CONTEXT;
  return it->second.alive ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

CUresult current_ctx(State &s, CUcontext *out) {
  std::vector<CUcontext> &stack = ctx_stack();
  if (stack.empty() || !stack.back()) return CUDA_ERROR_INVALID_CONTEXT;
  if (CUresult r = lookup_ctx(s, stack.back())) return r;
  *out = stack.back();
  return CUDA_SUCCESS;
}

CUresult check_device(const State &s, CUdevice dev) {
  return dev >= 0 && dev < static_cast<int>(s.devices.size()) ? CUDA_SUCCESS
                                                               : CUDA_ERROR_INVALID_DEVICE;
}

CUresult charge(Device &d, Bytes n) {
  if (n == 0) return CUDA_SUCCESS;
  Bytes taken = d.used + d.foreign;
  if (taken > d.total || n > d.total - taken) return CUDA_ERROR_OUT_OF_MEMORY;
  d.used += n;
  return CUDA_SUCCESS;
}

void uncharge(Device &d, Bytes n) { d.used -= n; }

void release_ctx_resources(State &s, CUcontext ctx) {
  // Pool blocks first: memory_release_ctx must not see them as plain allocations.
  pool_release_ctx(s, ctx);
  ipc_release_ctx(s, ctx);
  memory_release_ctx(s, ctx);
  host_release_ctx(s, ctx);
  vmm_release_ctx(s, ctx);
  array_release_ctx(s, ctx);
  stream_release_ctx(s, ctx);
  module_release_ctx(s, ctx);
  external_release_ctx(s, ctx);
}

uint64_t thread_id() { return static_cast<uint64_t>(pthread_self()); }

std::vector<CUcontext> &ctx_stack() {
  thread_local std::vector<CUcontext> stack;
  return stack;
}

}  // namespace fc
