// See native_stack.h.
#include "native_stack.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>

#include <atomic>

#include "loaded_symbol.h"
#include "own_work.h"

namespace vt {

std::atomic<int> g_native_depth{0};

namespace {

uint64_t g_self_lo = 0, g_self_hi = 0;  // libvramtrace's mapped range, trimmed from stacks

int find_self(dl_phdr_info* info, size_t, void* data) {
  uint64_t probe = reinterpret_cast<uint64_t>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    if (probe >= lo && probe < hi) {
      // The whole object: from its lowest to its highest loadable segment.
      uint64_t all_lo = ~0ull, all_hi = 0;
      for (int j = 0; j < info->dlpi_phnum; ++j) {
        const ElfW(Phdr)& p = info->dlpi_phdr[j];
        if (p.p_type != PT_LOAD) continue;
        uint64_t a = info->dlpi_addr + p.p_vaddr;
        if (a < all_lo) all_lo = a;
        if (a + p.p_memsz > all_hi) all_hi = a + p.p_memsz;
      }
      g_self_lo = all_lo;
      g_self_hi = all_hi;
      return 1;
    }
  }
  return 0;
}

}  // namespace

namespace {
// libunwind's first call initializes it under a lock of its own, which a fork while another thread
// holds it leaves held in the child forever (found: a child's first allocation hung in
// unw_set_caching_policy). So the one call that initializes it is made once, under g_unw_mu with
// every signal blocked, and a fork waits for it to end (pthread_atfork's prepare handler takes
// g_unw_mu). After it, unwinding with per-thread caches takes no lock of libunwind's.
pthread_mutex_t g_unw_mu = PTHREAD_MUTEX_INITIALIZER;
std::atomic<bool> g_unw_ready{false};
__attribute__((constructor)) void order_forks_after_unwinder_setup() {
  pthread_atfork([] { pthread_mutex_lock(&g_unw_mu); }, [] { pthread_mutex_unlock(&g_unw_mu); },
                 [] { pthread_mutex_init(&g_unw_mu, nullptr); });
}
}  // namespace

void configure_native_stacks(int depth) {
  if (depth > kMaxStackDepth) depth = kMaxStackDepth;
  if (depth < 0) depth = 0;
  if (!loader_list_usable()) depth = 0;  // a forked child whose list lock stayed held: unwinding walks it
  if (g_self_hi == 0 && depth > 0) dl_iterate_phdr(find_self, reinterpret_cast<void*>(&configure_native_stacks));
  if (!g_unw_ready.load(std::memory_order_acquire)) {
    OwnWork own(true);  // no handler of this thread may fork (and wait for g_unw_mu) in there
    pthread_mutex_lock(&g_unw_mu);
    if (!g_unw_ready.load(std::memory_order_relaxed)) {
      // Per-thread caches of unwind info: no lock shared between threads while unwinding.
      unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
      g_unw_ready.store(true, std::memory_order_release);
    }
    pthread_mutex_unlock(&g_unw_mu);
  }
  g_native_depth.store(depth, std::memory_order_release);
}

namespace {
// The walk, out of line: its 2 KiB frame (and the prologue that sets it up) is only paid for when
// stacks are on (-17 instructions per event with VRAMTRACE_STACK_DEPTH=0, callgrind).
__attribute__((noinline)) int walk(uint64_t* out, int max, uint64_t caller_ip, int depth) {
  // Room for our own frames (hook, recorder) on top of the requested depth.
  constexpr int kOwnFrames = 8;
  void* ips[kMaxStackDepth + kOwnFrames];
  int want = depth + kOwnFrames;
  if (want > max + kOwnFrames) want = max + kOwnFrames;
  int n = unw_backtrace(ips, want);
  int skip = -1;
  for (int i = 0; i < n && i < 2 * kOwnFrames && caller_ip; ++i)
    if (reinterpret_cast<uint64_t>(ips[i]) == caller_ip) {
      skip = i;
      break;
    }
  if (skip < 0) {
    skip = 0;
    while (skip < n) {
      uint64_t ip = reinterpret_cast<uint64_t>(ips[skip]);
      if (ip < g_self_lo || ip >= g_self_hi) break;
      ++skip;
    }
  }
  int count = n - skip;
  if (count > depth) count = depth;
  if (count > max) count = max;
  for (int i = 0; i < count; ++i) out[i] = reinterpret_cast<uint64_t>(ips[skip + i]);
  return count;
}
}  // namespace

int capture_native(uint64_t* out, int max, uint64_t caller_ip) {
  int depth = g_native_depth.load(std::memory_order_relaxed);
  return depth == 0 ? 0 : walk(out, max, caller_ip, depth);
}

}  // namespace vt
