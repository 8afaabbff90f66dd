// See deferred_events.h. A queue is a ring: the signal handler that interrupts appends at tail,
// the interrupted thread takes from head; both run on the same thread, so compiler fences are
// all the ordering needed. Queues are claimed from the pool with one CAS.
#include "deferred_events.h"

#include <atomic>
#include <cstring>

#include "recorder.h"
#include "reentry_guard.h"

namespace vt {

namespace {
constexpr int kQueues = 64;     // threads with queued events at the same moment
constexpr uint32_t kSlots = 64;  // events one interruption may leave behind
}  // namespace

struct DeferredQueue {
  std::atomic<int> owned{0};
  volatile uint32_t head = 0, tail = 0;
  // Raw bytes, not Event[]: Event's initializers would put the whole pool in .data.
  alignas(Event) unsigned char events[kSlots][sizeof(Event)];
};

namespace {
DeferredQueue g_pool[kQueues];  // .bss: pages are touched only when used
}  // namespace

__thread DeferredQueue* t_deferred __attribute__((tls_model("initial-exec"))) = nullptr;
__thread uint8_t t_phase __attribute__((tls_model("initial-exec"))) = kPhaseNone;  // reentry_guard.h

bool defer_event(const Event& e) {
  DeferredQueue* q = t_deferred;
  if (!q) {
    for (DeferredQueue& c : g_pool) {
      int expected = 0;
      if (c.owned.load(std::memory_order_relaxed) == 0 &&
          c.owned.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
        c.head = c.tail = 0;
        q = &c;
        break;
      }
    }
    if (!q) {
      count_lost_events(1);
      return false;
    }
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_deferred = q;
  }
  uint32_t tail = q->tail;
  if (tail - q->head >= kSlots) {
    count_lost_events(1);
    return false;
  }
  memcpy(q->events[tail % kSlots], &e, sizeof e);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  q->tail = tail + 1;  // published: the interrupted scope may take it from here on
  return true;
}

void record_deferred_events() {
  DeferredQueue* q = t_deferred;
  if (!q) return;
  while (q->head != q->tail) {
    Event e;
    memcpy(&e, q->events[q->head % kSlots], sizeof e);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    q->head = q->head + 1;
    uint64_t site = e.caller_ip;
    record_with_stack(e, &site, site ? 1 : 0);
  }
}

bool release_deferred_queue() {
  DeferredQueue* q = t_deferred;
  if (!q) return true;
  if (q->head != q->tail) return false;
  t_deferred = nullptr;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  q->owned.store(0, std::memory_order_release);
  return true;
}

void forget_deferred_events() {
  t_deferred = nullptr;
  // (a store only where one is needed: writing a page the child never used copies or allocates it)
  for (DeferredQueue& q : g_pool)
    if (q.owned.load(std::memory_order_relaxed)) q.owned.store(0, std::memory_order_relaxed);
}

}  // namespace vt
