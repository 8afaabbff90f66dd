// See fast_unwind.h.
#include "fast_unwind.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>

#include "frame_rules.h"
#include "native_stack.h"
#include "stack_room.h"
#include "thread_block.h"

namespace vt {

std::atomic<int> g_unwinder_mode{int(UnwinderMode::Fast)};

namespace {

// One frame of a walk: where it is (its return address or, for the first, its own address; its
// stack pointer and rbp) and the word its step read for rbp (0: rbp was kept).
struct WalkFrame {
  uint64_t rip, rsp, rbp, rbp_slot;
};

struct RuleSlot {
  uint64_t pc;  // 0: empty (no return address is below 0x4000)
  FrameRule rule;
};

// The walk's limit: unw_backtrace's largest request (native_stack.h) and the first frame.
constexpr int kMaxWalk = kMaxStackDepth + kOwnFrames + 1;
constexpr uint32_t kFirstRuleBits = 11;  // 2,048 slots (32 KiB), 4x when half full
constexpr uint32_t kMaxRuleBits = 20;    // 16 MiB: then it starts over empty
// After this many stacks in a row that needed libunwind, the thread goes to libunwind directly
// for a while (a program whose every stack has a frame without call frame information would
// otherwise pay for both walks).
constexpr uint32_t kFailsBeforeRest = 8, kRestStacks = 4096;

struct ThreadUnwind {
  WalkFrame walks[2][kMaxWalk];
  WalkFrame* last = walks[0];   // the thread's last walk
  WalkFrame* fresh = walks[1];  // this walk, until it meets the last one
  int last_n = 0;
  bool busy = false;  // a signal handler's event during a walk goes to libunwind
  uint32_t fails_in_a_row = 0, rest_left = 0;
  RuleSlot* rules = nullptr;
  uint32_t rule_bits = 0, rules_used = 0;
  uint64_t rules_unloads = 0;  // the loader's unload count the rules were read under
};

// Mapped on a thread's first stack, unmapped when it exits (18 KiB: too big for the static TLS a
// preloaded library may take).
thread_local ThreadUnwind* t_unwind __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_unwind_failed __attribute__((tls_model("initial-exec"))) = false;

void unmap_rules(ThreadUnwind* t) {
  if (t->rules) munmap(t->rules, sizeof(RuleSlot) << t->rule_bits);
  t->rules = nullptr;
}

pthread_key_t g_unwind_key;
bool g_unwind_key_ok = [] {
  return pthread_key_create(&g_unwind_key, [](void* m) {
           // Runs in the exiting thread; its later stacks (other destructors') are libunwind's.
           t_unwind = nullptr;
           t_unwind_failed = true;
           unmap_rules(static_cast<ThreadUnwind*>(m));
           munmap(m, sizeof(ThreadUnwind));
         }) == 0;
}();

ThreadUnwind* thread_unwind() {
  if (ThreadUnwind* t = t_unwind) return t;
  if (t_unwind_failed || !g_unwind_key_ok) return nullptr;
  void* m = map_thread_block(g_unwind_key, sizeof(ThreadUnwind));
  if (!m) {
    t_unwind_failed = true;
    return nullptr;
  }
  return t_unwind = new (m) ThreadUnwind;
}

inline uint64_t slot_of(uint64_t pc, uint32_t bits) { return (pc * 0x9e3779b97f4a7c15ull) >> (64 - bits); }

bool insert_rule(ThreadUnwind* t, uint64_t pc, FrameRule rule, uint64_t unloads) {
  // An object was unloaded since the cached rules were read: another may now sit at its addresses,
  // so they start over. (The last walk's frames need no such care: a frame whose code is gone
  // cannot be on the stack, and the memo's words are read again before they are reused.)
  const bool unloaded = t->rules && unloads != t->rules_unloads;
  if (!t->rules || unloaded || t->rules_used >= (1u << t->rule_bits) / 2) {
    uint32_t bits = t->rules ? t->rule_bits + 2 : kFirstRuleBits;
    bool restart = unloaded || bits > kMaxRuleBits;  // (or this many return addresses: start over)
    if (restart) bits = t->rule_bits;
    void* m = mmap(nullptr, sizeof(RuleSlot) << bits, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return false;
    RuleSlot* table = static_cast<RuleSlot*>(m);
    uint32_t used = 0;
    if (t->rules && !restart) {
      for (uint64_t i = 0, n = 1ull << t->rule_bits; i < n; ++i) {
        const RuleSlot& s = t->rules[i];
        if (!s.pc) continue;
        uint64_t j = slot_of(s.pc, bits);
        while (table[j].pc) j = (j + 1) & ((1ull << bits) - 1);
        table[j] = s;
        ++used;
      }
    }
    unmap_rules(t);
    t->rules = table;
    t->rule_bits = bits;
    t->rules_used = used;
    t->rules_unloads = unloads;
  }
  uint64_t mask = (1ull << t->rule_bits) - 1, j = slot_of(pc, t->rule_bits);
  while (t->rules[j].pc) j = (j + 1) & mask;
  t->rules[j] = {pc, rule};
  ++t->rules_used;
  return true;
}

// A cache miss: the object's call frame information (out of line: the walk's loop keeps its
// registers).
__attribute__((noinline, cold)) FrameRule rule_missed(ThreadUnwind* t, uint64_t pc) {
  uint64_t unloads;
  FrameRule rule = frame_rule_at(pc, &unloads);
  if (!insert_rule(t, pc, rule, unloads)) rule.kind = FrameKind::Other;  // (not cached: libunwind walks it)
  return rule;
}

// The rule at pc: the thread's cache, else the object's call frame information.
inline FrameRule rule_at(ThreadUnwind* t, uint64_t pc) {
  if (__builtin_expect(t->rules != nullptr, 1)) {
    const RuleSlot* rules = t->rules;
    const uint32_t bits = t->rule_bits;
    const uint64_t mask = (1ull << bits) - 1;
    for (uint64_t j = slot_of(pc, bits);; j = (j + 1) & mask) {
      if (rules[j].pc == pc) return rules[j].rule;
      if (!rules[j].pc) break;
    }
  }
  return rule_missed(t, pc);
}

// A word of the thread's stack (the bounds were checked when the walk first read it). A stack
// slot may be read whatever its C type (a return address, a saved register): memcpy.
__attribute__((no_sanitize("address"))) inline uint64_t stack_word(uint64_t at) {
  uint64_t v;
  memcpy(&v, reinterpret_cast<const void*>(at), sizeof v);
  return v;
}

// Whether every word the walk of frames[from..n) read when stepping between them still holds
// what it read: then walking from frames[from] again gives frames[from + 1..n) again.
__attribute__((no_sanitize("address"))) inline bool same_above(const WalkFrame* f, int from, int n) {
  uint64_t differ = 0;
  for (int k = from; k + 1 < n; ++k) {
    differ |= stack_word(f[k + 1].rsp - 8) ^ f[k + 1].rip;
    if (f[k].rbp_slot) differ |= stack_word(f[k].rbp_slot) ^ f[k + 1].rbp;
  }
  return differ == 0;
}

// The walk from the first frame `start` (fast_unwind.h). hi: the stack's end (exclusive).
int walk(ThreadUnwind* t, WalkFrame start, uint64_t hi, void** out, int max) {
  WalkFrame* last = t->last;
  const int last_n = t->last_n;
  WalkFrame* dst = t->fresh;  // this walk's frames go here until it meets the last walk
  bool met = false;
  int j = 0, li = 0, n = 0;
  dst[j++] = start;
  // The current frame, dst[j - 1], in registers: the next step's addresses come from these, not
  // from the record just stored.
  uint64_t rip = start.rip, rsp = start.rsp, rbp = start.rbp;
  for (;;) {
    if (!met) {
      while (li < last_n && last[li].rsp < rsp) ++li;
      if (li < last_n && last[li].rsp == rsp && last[li].rip == rip && last[li].rbp == rbp &&
          same_above(last, li, last_n)) {
        // This walk's frames [0, j - 1) and the last one's from li on; the last one's words hold.
        met = true;
        const int here = j - 1;
        int take = last_n - li;
        if (here + take > kMaxWalk) take = kMaxWalk - here;  // (a deeper start: the rest is walked)
        if (here != li) memmove(last + here, last + li, size_t(take) * sizeof *last);
        memcpy(last, t->fresh, size_t(here) * sizeof *last);
        dst = last;
        j = here + take;
        for (int k = here + 1; k < j && n < max; ++k) out[n++] = reinterpret_cast<void*>(last[k].rip);
        if (n == max) {
          t->last_n = j;
          return n;
        }
        rip = last[j - 1].rip, rsp = last[j - 1].rsp, rbp = last[j - 1].rbp;
        continue;  // the last one's last step is taken again: its end, or more room now
      }
    }
    if (n == max) break;
    const uint64_t pc = rip - (j > 1 ? 1 : 0);  // (a return address's call is the instruction before)
    const FrameRule rule = rule_at(t, pc);
    if (rule.kind == FrameKind::Outermost) break;
    if (rule.kind != FrameKind::CfaRsp && rule.kind != FrameKind::CfaRbp) {
      n = -1;
      break;
    }
    const uint64_t cfa = (rule.kind == FrameKind::CfaRsp ? rsp : rbp) + uint64_t(int64_t(rule.cfa_offset));
    // Reads stay between this frame's stack pointer and the stack's end; the walk goes up.
    if (cfa < rsp + 8 || cfa > hi) {
      n = -1;
      break;
    }
    const uint64_t ra = stack_word(cfa - 8);
    uint64_t slot = 0;
    if (rule.rbp_offset != kRbpKept) {
      slot = cfa + uint64_t(int64_t(rule.rbp_offset));
      if (slot < rsp || slot > hi - 8) {
        n = -1;
        break;
      }
      rbp = stack_word(slot);
    }
    dst[j - 1].rbp_slot = slot;
    if (ra < 0x4000) break;  // (libunwind's end: an address no code is at)
    out[n++] = reinterpret_cast<void*>(ra);
    rip = ra;
    rsp = cfa;
    dst[j++] = {rip, rsp, rbp, 0};
  }
  if (met) {
    t->last_n = n < 0 ? 0 : j;
  } else {
    t->fresh = last;  // this walk becomes the last one
    t->last = dst;
    t->last_n = n < 0 ? 0 : j;
  }
  return n;
}

std::atomic<uint64_t> g_checked[3];  // by CheckedWalk

}  // namespace

__attribute__((noinline)) int fast_backtrace(void** out, int max) {
#if !defined(__x86_64__)
  (void)out, (void)max, (void)walk, (void)thread_unwind;
  return -1;  // the rules (frame_rules.h) are x86-64's: elsewhere every stack is libunwind's
#else
  ThreadUnwind* t = thread_unwind();
  if (!t || t->busy || max <= 0) return -1;
  if (t->rest_left) {
    --t->rest_left;
    return -1;
  }
  uint64_t rip, rsp, rbp;
  // This frame as it is here: the call frame information at `rip` describes rsp and rbp at it.
  asm volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2" : "=r"(rip), "=r"(rsp), "=r"(rbp));
  const StackBounds& b = t_stack_bounds;
  if (!b.learned || b.hi == 0 || rsp >= b.hi || (b.lo && rsp < b.lo)) return -1;  // (an alternate stack, a fiber's)
  t->busy = true;
  int n = walk(t, {rip, rsp, rbp, 0}, b.hi, out, max > kMaxWalk - 1 ? kMaxWalk - 1 : max);
  t->busy = false;
  if (n >= 0) {
    t->fails_in_a_row = 0;
  } else if (++t->fails_in_a_row >= kFailsBeforeRest) {
    t->fails_in_a_row = 0;
    t->rest_left = kRestStacks;
  }
  return n;
#endif
}

void count_checked_walk(CheckedWalk outcome) { g_checked[int(outcome)].fetch_add(1, std::memory_order_relaxed); }

namespace {
// Checked mode's account, at exit (tests read it on stderr).
__attribute__((destructor)) void report_checked_walks() {
  if (unwinder_mode() != UnwinderMode::Checked) return;
  char line[200];
  unsigned long long same = g_checked[int(CheckedWalk::Same)].load(),
                     differed = g_checked[int(CheckedWalk::Differed)].load(),
                     alone = g_checked[int(CheckedWalk::LibunwindOnly)].load();
  int len = snprintf(line, sizeof line,
                     "vramtrace: unwinder check: %llu of %llu stacks differed from libunwind's; %llu walked by libunwind alone\n",
                     differed, same + differed, alone);
  if (len > 0) (void)!write(2, line, size_t(len));
}
}  // namespace

}  // namespace vt
