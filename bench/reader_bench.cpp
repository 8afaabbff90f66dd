// Throughput of the trace reader (analyzer/read/trace_reader.h) over one trace, in one of three modes:
//   scan    next() over every record, counting events (the floor of any analysis)
//   live    scan + a live-bytes map keyed by kind and address (acquire inserts, release erases), with the
//           peak, as a leak or peak analysis would
//   stacks  load_stacks() (the skip-scan for stack, module and code records), then scan
// Prints one line of key=value pairs: events, seconds, events/s, peak RSS (getrusage ru_maxrss,
// which counts the mapped trace pages the reader touched) and, at the end, the anonymous and
// file-backed parts of the resident set (/proc/self/status). Run one mode per process so that
// the peak RSS is that mode's.
//
// Usage: reader_bench TRACE [scan|live|stacks]   (default scan)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>

#include "trace_reader.h"

namespace {

using Clock = std::chrono::steady_clock;

// A field of /proc/self/status in KiB, -1 when absent.
long status_kib(const char* key) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, nullptr, 10);
      break;
    }
  fclose(f);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s TRACE [scan|live|stacks]\n", argv[0]);
    return 2;
  }
  std::string mode = argc > 2 ? argv[2] : "scan";
  if (mode != "scan" && mode != "live" && mode != "stacks") {
    fprintf(stderr, "reader_bench: unknown mode %s\n", mode.c_str());
    return 2;
  }
  using vt::analyzer::Record;
  using vt::analyzer::TraceReader;

  auto t0 = Clock::now();
  std::string err;
  auto reader = TraceReader::open(argv[1], &err);
  if (!reader) {
    fprintf(stderr, "reader_bench: %s\n", err.c_str());
    return 1;
  }
  if (mode == "stacks") reader->load_stacks();
  auto t1 = Clock::now();

  uint64_t events = 0, records = 0, checksum = 0;
  uint64_t live = 0, peak = 0, unmatched_frees = 0;
  std::unordered_map<uint64_t, uint64_t> live_by_addr;
  Record r;
  if (mode == "live") {
    while (reader->next(&r)) {
      ++records;
      if (!r.is_event()) continue;
      ++events;
      if (!r.op || r.result != 0 || !r.has(vt::format::kEvAddr)) continue;
      // A VMM mapping may start where its reservation does: key by kind and address.
      uint64_t key = r.addr ^ (uint64_t(r.op->kind) << 58);
      if (r.op->action == vt::Action::Acquire) {
        auto [it, fresh] = live_by_addr.try_emplace(key, r.size);
        bool counted = r.op->kind != vt::MemKind::VmmReservation;
        if (!fresh) {  // an acquire over a live address: the old block was lost track of
          if (counted) live -= it->second;
          it->second = r.size;
        }
        if (counted) live += r.size;  // a VMM reservation is address space, not memory
        if (live > peak) peak = live;
      } else if (r.op->action == vt::Action::Release) {
        auto it = live_by_addr.find(key);
        if (it == live_by_addr.end()) {
          ++unmatched_frees;
          continue;
        }
        if (r.op->kind != vt::MemKind::VmmReservation) live -= it->second;
        live_by_addr.erase(it);
      }
    }
  } else {
    while (reader->next(&r)) {
      ++records;
      if (!r.is_event()) continue;
      ++events;
      checksum += r.addr ^ r.size ^ r.t_ns;
    }
  }
  auto t2 = Clock::now();

  double open_s = std::chrono::duration<double>(t1 - t0).count();
  double read_s = std::chrono::duration<double>(t2 - t1).count();
  double total_s = open_s + read_s;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  printf("mode=%s events=%llu records=%llu open_s=%.3f read_s=%.3f events_per_s=%.0f maxrss_mib=%.1f "
         "rss_anon_mib=%.1f rss_file_mib=%.1f file_mib=%.1f problems=%zu",
         mode.c_str(), static_cast<unsigned long long>(events), static_cast<unsigned long long>(records),
         open_s, read_s, events / (total_s > 0 ? total_s : 1e-9), ru.ru_maxrss / 1024.0,
         status_kib("RssAnon") / 1024.0, status_kib("RssFile") / 1024.0, reader->file_size() / 1048576.0,
         reader->problems().size());
  if (mode == "live")
    printf(" live_blocks=%zu live_mib=%.1f peak_mib=%.1f unmatched_frees=%llu", live_by_addr.size(),
           live / 1048576.0, peak / 1048576.0, static_cast<unsigned long long>(unmatched_frees));
  if (mode == "stacks") printf(" stacks=%zu modules=%zu", reader->stacks().stacks.size(), reader->stacks().modules.size());
  printf(" checksum=%llx\n", static_cast<unsigned long long>(checksum & 0xffff));
  return 0;
}
