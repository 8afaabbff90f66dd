// See lookup_gaps.h.
#include "lookup_gaps.h"

#include <atomic>
#include <cstring>

#include "clock.h"
#include "log.h"
#include "meta_records.h"
#include "recorder.h"
#include "recorder_internal.h"
#include "reentry_guard.h"
#include "torch_hooks.h"

namespace vt {

namespace {

struct EntryPoint {
  const char* symbol;
  format::LookupCategory category;
};
// Sorted by symbol (strcmp order): generated from memory_entry_points.txt, none/lookup rows left out.
constexpr EntryPoint kMemoryEntryPoints[] = {
#include "memory_entry_points.inc"
};
constexpr int kEntries = int(sizeof kMemoryEntryPoints / sizeof kMemoryEntryPoints[0]);
constexpr int kWords = (kEntries + 63) / 64;

// One bit per table row: handed out unhooked. The version and flags of the first sighting are
// kept for the record (a relaxed race between two first sightings keeps either: both are true).
std::atomic<uint64_t> g_seen[kWords];
std::atomic<uint32_t> g_version[kEntries];
std::atomic<uint64_t> g_flags[kEntries];
// The first lookup that reached us, and the name it asked for.
std::atomic<bool> g_reached{false};
char g_first_symbol[64];
std::atomic<bool> g_first_ready{false};

int find(const char* symbol) {
  int lo = 0, hi = kEntries - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(symbol, kMemoryEntryPoints[mid].symbol);
    if (c == 0) return mid;
    if (c < 0) hi = mid - 1;
    else lo = mid + 1;
  }
  return -1;
}

// Libraries opened out of the hooks' reach: a slot is claimed with fetch_add, filled, then marked
// ready; a duplicate path written by two racing first opens is harmless (the analyzer keeps one).
constexpr int kOpenSlots = 16;
constexpr size_t kOpenPathMax = 256;
struct IsolatedOpen {
  char path[kOpenPathMax];
  int mode;
  bool other_namespace;
  std::atomic<bool> ready;
};
IsolatedOpen g_opens[kOpenSlots];
std::atomic<int> g_open_claimed{0};
constexpr const char kMoreOpens[] = "(more libraries)";
std::atomic<bool> g_audit_attached{false};

void write_record(uint32_t kind, const char* symbol, uint32_t category, uint32_t version, uint64_t flags, uint64_t t) {
  uint8_t payload[320];
  format::PayloadWriter w(payload, sizeof payload);
  format::LookupRecord rec;
  rec.kind = kind;
  rec.symbol = format::Text(symbol, strnlen(symbol, kind == format::kLookupIsolatedOpen ? kOpenPathMax - 1 : 128));
  rec.category = category;
  rec.version = version;
  rec.flags = flags;
  format::encode<format::LookupSchema>(w, rec);
  write_meta(format::kTagLookup, payload, w.size(), t);
}

void write_reached(uint64_t t) {
  if (g_first_ready.load(std::memory_order_acquire)) write_record(format::kLookupReached, g_first_symbol, 0, 0, 0, t);
}

void write_gap(int i, uint64_t t) {
  write_record(format::kLookupGap, kMemoryEntryPoints[i].symbol, kMemoryEntryPoints[i].category,
               g_version[i].load(std::memory_order_relaxed), g_flags[i].load(std::memory_order_relaxed), t);
}

void write_open(int i, uint64_t t) {
  const IsolatedOpen& o = g_opens[i];
  bool caught = !o.other_namespace && g_audit_attached.load(std::memory_order_acquire);
  write_record(format::kLookupIsolatedOpen, o.path, caught ? 1 : 0, o.other_namespace ? 1 : 0, uint64_t(unsigned(o.mode)), t);
}

bool already_noted(const char* file, bool other_namespace) {
  int n = g_open_claimed.load(std::memory_order_acquire);
  for (int i = 0; i < n && i < kOpenSlots; ++i) {
    const IsolatedOpen& o = g_opens[i];
    if (o.ready.load(std::memory_order_acquire) && o.other_namespace == other_namespace &&
        strncmp(o.path, file, kOpenPathMax - 1) == 0)
      return true;
  }
  return n > kOpenSlots;  // the overflow record was claimed: nothing more is noted
}

}  // namespace

void note_audit_attached() { g_audit_attached.store(true, std::memory_order_release); }

void note_isolated_open(const char* file, int mode, bool other_namespace) {
  if (!file || !*file || already_noted(file, other_namespace)) return;
  int i = g_open_claimed.fetch_add(1, std::memory_order_acq_rel);
  if (i >= kOpenSlots) {
    if (i == kOpenSlots) {  // one record says there were more
      HookScope scope;
      if (!scope.nested_in_our_work() && recording())
        write_record(format::kLookupIsolatedOpen, kMoreOpens, 0, 0, 0, now_ns());
    }
    return;
  }
  IsolatedOpen& o = g_opens[i];
  size_t n = strnlen(file, kOpenPathMax - 1);
  memcpy(o.path, file, n);
  o.path[n] = '\0';
  o.mode = mode;
  o.other_namespace = other_namespace;
  o.ready.store(true, std::memory_order_release);
  // For `vramtrace run` when no trace gets written (every CUDA call was made from there): the
  // library and why the hooks cannot reach it. The LD_AUDIT module hands DEEPBIND ones the hooks.
  if (other_namespace || !g_audit_attached.load(std::memory_order_acquire)) {
    char note[kOpenPathMax + 96];
    snprintf(note, sizeof note, "%s (%s)", o.path,
             other_namespace ? "opened with dlmopen into another namespace" : "opened with RTLD_DEEPBIND");
    leave_run_note(note);
  }
  HookScope scope;
  if (!scope.nested_in_our_work() && recording()) write_open(i, now_ns());
}

void note_lookup(const char* symbol, bool substituted, int version, uint64_t flags) {
  if (!symbol || !*symbol) return;
  if (!g_reached.exchange(true, std::memory_order_acq_rel)) {
    size_t n = strnlen(symbol, sizeof g_first_symbol - 1);
    memcpy(g_first_symbol, symbol, n);
    g_first_symbol[n] = '\0';
    g_first_ready.store(true, std::memory_order_release);
    HookScope scope;  // the thread's chunk is ours while writing (a handler inside our work: at open)
    if (!scope.nested_in_our_work() && recording()) write_reached(now_ns());
    torch_early_probes();
  }
  if (substituted) return;
  int i = find(symbol);
  if (i < 0) return;  // not memory-relevant (or not a CUDA 13 name: the e2e lookup-gap test classifies those)
  uint64_t bit = uint64_t(1) << (i % 64);
  if (g_seen[i / 64].load(std::memory_order_relaxed) & bit) return;  // recorded already
  g_version[i].store(uint32_t(version), std::memory_order_relaxed);
  g_flags[i].store(flags, std::memory_order_relaxed);
  if (g_seen[i / 64].fetch_or(bit, std::memory_order_acq_rel) & bit) return;  // another thread was first
  HookScope scope;
  if (!scope.nested_in_our_work() && recording()) write_gap(i, now_ns());
}

void write_lookup_records(uint64_t t) {
  write_reached(t);
  for (int i = 0; i < kEntries; ++i)
    if (g_seen[i / 64].load(std::memory_order_acquire) & (uint64_t(1) << (i % 64))) write_gap(i, t);
  int opens = g_open_claimed.load(std::memory_order_acquire);
  for (int i = 0; i < opens && i < kOpenSlots; ++i)
    if (g_opens[i].ready.load(std::memory_order_acquire)) write_open(i, t);
  if (opens > kOpenSlots) write_record(format::kLookupIsolatedOpen, kMoreOpens, 0, 0, 0, t);
}

}  // namespace vt
