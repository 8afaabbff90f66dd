// See native_stack.h.
#include "load_steps.h"
#include "native_stack.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstring>

#include "loaded_symbol.h"
#include "own_work.h"
#include "unwinder_library.h"

namespace vt {

std::atomic<int> g_native_depth{0};
namespace native_detail {
int (*g_backtrace)(void**, int) = nullptr;
}  // namespace native_detail
using native_detail::g_backtrace;

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
void order_forks_after_unwinder_setup() {
  pthread_atfork([] { pthread_mutex_lock(&g_unw_mu); }, [] { pthread_mutex_unlock(&g_unw_mu); },
                 [] { pthread_mutex_init(&g_unw_mu, nullptr); });
}
}  // namespace

void configure_native_stacks(int depth) {
  if (depth > kMaxStackDepth) depth = kMaxStackDepth;
  if (depth < 0) depth = 0;
  if (!loader_list_usable()) depth = 0;  // a forked child whose list lock stayed held: unwinding walks it
  const Unwinder* unw = unwinder();
  if (!unw) depth = 0;  // libunwind could not be opened (unwinder_library.h): the trace notes why
  else __atomic_store_n(&g_backtrace, unw->backtrace, __ATOMIC_RELEASE);  // (the walk's one load, as a PLT slot's)
  if (g_self_hi == 0 && depth > 0) dl_iterate_phdr(find_self, reinterpret_cast<void*>(&configure_native_stacks));
  if (!g_unw_ready.load(std::memory_order_acquire)) {
    OwnWork own(true);  // no handler of this thread may fork (and wait for g_unw_mu) in there
    pthread_mutex_lock(&g_unw_mu);
    if (!g_unw_ready.load(std::memory_order_relaxed)) {
      // Per-thread caches of unwind info: no lock shared between threads while unwinding.
      if (unw) unw->use_per_thread_caches();
      g_unw_ready.store(true, std::memory_order_release);
    }
    pthread_mutex_unlock(&g_unw_mu);
  }
  g_native_depth.store(depth, std::memory_order_release);
}

namespace native_detail {
// The unwinder wrote straight into `out` (room for max + kOwnFrames: native_stack.h); our own
// frames are skipped in place: no second buffer on the program's stack (a 2 KiB one was,
// docs/security.md "Stack use").
int own_frames(const uint64_t* out, int n, uint64_t caller_ip) {
  for (int i = 0; i < n && i < 2 * kOwnFrames && caller_ip; ++i)
    if (out[i] == caller_ip) return i;
  int skip = 0;
  while (skip < n && out[skip] >= g_self_lo && out[skip] < g_self_hi) ++skip;
  return skip;
}

void check_walk(const uint64_t* out, int n, int size, uint64_t caller_ip) {
  uint64_t slow[kMaxStackDepth + 2 * kOwnFrames];
  int slow_n = g_backtrace(reinterpret_cast<void**>(slow), size + kOwnFrames);  // (one frame more of ours)
  int own = own_frames(out, n, caller_ip), slow_own = own_frames(slow, slow_n, caller_ip);
  int count = n - own, slow_count = slow_n - slow_own;
  // The fast walk stopped at `size` frames in all: libunwind's may go on beyond it.
  bool same = n == size ? slow_count >= count : slow_count == count;
  for (int i = 0; same && i < count; ++i) same = out[own + i] == slow[slow_own + i];
  count_checked_walk(same ? CheckedWalk::Same : CheckedWalk::Differed);
}
}  // namespace native_detail

// Out of line for the callers that are not the recorder's hot path.
__attribute__((noinline)) int capture_native(uint64_t* out, int max, uint64_t caller_ip) {
  return capture_native_here(out, max, caller_ip);
}

}  // namespace vt

// This file's load-time step(s), run in order by load_time.cpp.
namespace vt::load_steps {
void order_forks_after_unwinder_setup() { vt::order_forks_after_unwinder_setup(); }
}  // namespace vt::load_steps
