// See stack_room.h.
#include "stack_room.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "meta_records.h"
#include "own_work.h"
#include "recorder_internal.h"

extern "C" void* __libc_stack_end;  // glibc: the main thread's stack top

namespace vt {

__thread StackBounds t_stack_bounds __attribute__((tls_model("initial-exec")));

namespace {

void set_alt(const stack_t& ss) {
  if (ss.ss_flags & SS_DISABLE) {
    t_stack_bounds.alt_lo = t_stack_bounds.alt_hi = 0;
  } else {
    t_stack_bounds.alt_lo = reinterpret_cast<uint64_t>(ss.ss_sp);
    t_stack_bounds.alt_hi = t_stack_bounds.alt_lo + ss.ss_size;
  }
}

std::atomic<bool> g_short_noted{false};

}  // namespace

void learn_stack_bounds() {
  OwnWork own;  // errno is the program's
  t_stack_bounds.learned = true;
  if (syscall(SYS_gettid) == getpid()) {
    // The main thread's stack grows down from its top up to RLIMIT_STACK (pthread_getattr_np
    // would read /proc/self/maps for it: a descriptor and the heap).
    // (__libc_stack_end is the stack pointer _start was entered with: every frame is below it)
    if (__libc_stack_end) t_stack_bounds.hi = reinterpret_cast<uint64_t>(__libc_stack_end);
    struct rlimit lim;
    if (__libc_stack_end && getrlimit(RLIMIT_STACK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
      const uint64_t top = reinterpret_cast<uint64_t>(__libc_stack_end);
      t_stack_bounds.lo = top > lim.rlim_cur ? top - lim.rlim_cur : 0;
    }
  } else {
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      void* addr = nullptr;
      size_t size = 0;
      if (pthread_attr_getstack(&a, &addr, &size) == 0) {
        t_stack_bounds.lo = reinterpret_cast<uint64_t>(addr);
        t_stack_bounds.hi = t_stack_bounds.lo + size;
      }
      pthread_attr_destroy(&a);
    }
  }
  stack_t ss;
  if (syscall(SYS_sigaltstack, nullptr, &ss) == 0) set_alt(ss);
}

void note_alt_stack(const stack_t* ss) {
  if (ss) set_alt(*ss);
}

void note_short_stack(uint64_t t) {
  if (g_short_noted.exchange(true)) return;
  // (no formatting: there is little stack left here)
  static const char kText[] =
      "events recorded without a stack: too little stack was left to unwind (a signal handler on a small "
      "alternate stack, or a thread with a small stack); their memory is recorded";
  uint8_t buf[sizeof kText + 16];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::NoteSchema>(p, format::NoteRecord{format::Text(kText, sizeof kText - 1)});
  write_meta(format::kTagNote, p.data(), p.size(), t);
}

}  // namespace vt
