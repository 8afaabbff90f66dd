// How the text forms (report_text.cpp, report_summary.cpp) say times, counts and kinds of memory:
// times since the trace's start with the precision the run's length needs, "1 allocation" /
// "2 allocations", memory kinds and op kinds in words.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "byte_size.h"
#include "report_model.h"

namespace vt::analyzer {

// The trace's time zero: the header's start, or the first event when that came earlier.
inline uint64_t time_base(const TraceReport& r) {
  return r.process.start_monotonic_ns && r.process.start_monotonic_ns < r.first_t_ns ? r.process.start_monotonic_ns
                                                                                     : r.first_t_ns;
}

// A time since the start, with about a thousandth of the run's length as its resolution: a 27 ms
// run in ms with 3 decimals ("12.345 ms"), a 40 s run in s with 3, an hour-long run in s with 1.
inline std::string secs(const TraceReport& r, uint64_t t) {
  uint64_t base = time_base(r), span = r.last_t_ns > base ? r.last_t_ns - base : 0;
  double since = t >= base ? double(t - base) : 0.0;
  char b[48];
  if (span < 1000000) {
    snprintf(b, sizeof b, "%.1f us", since / 1e3);
  } else if (span < 1000000000) {
    snprintf(b, sizeof b, "%.*f ms", span < 10000000 ? 3 : span < 100000000 ? 2 : 1, since / 1e6);
  } else {
    snprintf(b, sizeof b, "%.*f s", span < 100000000000ull ? 3 : span < 1000000000000ull ? 2 : 1, since / 1e9);
  }
  return b;
}

// Who allocated a group (SiteGroup::threads): "thread 4242 (worker-7)", or "3 threads: 4242
// (worker-7) 200 MiB, 4243 100 MiB, ..." (the biggest 3); "" for none. Names unescaped.
inline std::string threads_words(const std::vector<ThreadShare>& threads) {
  auto one = [](const ThreadShare& t) { return std::to_string(t.tid) + (t.name.empty() ? "" : " (" + t.name + ")"); };
  if (threads.empty()) return "";
  if (threads.size() == 1) return "thread " + one(threads[0]);
  std::string s = std::to_string(threads.size()) + " threads:";
  for (size_t i = 0; i < threads.size() && i < 3; ++i)
    s += std::string(i ? ", " : " ") + one(threads[i]) + " " + format_bytes(threads[i].bytes);
  if (threads.size() > 3) s += ", ...";
  return s;
}

// A growth's threads: threads_words, and "(1 of the 32 threads that allocated there)".
inline std::string growth_threads_words(const std::vector<ThreadShare>& threads, uint32_t at_site) {
  std::string s = threads_words(threads);
  if (at_site > threads.size())
    s += " (" + std::to_string(threads.size()) + " of the " + std::to_string(at_site) + " threads that allocated there)";
  return s;
}

// "1 allocation", "2 allocations".
inline std::string count(uint64_t n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

// "40%": part of whole, rounded.
inline std::string pct_of(uint64_t part, uint64_t whole) {
  char b[16];
  snprintf(b, sizeof b, "%.0f%%", whole ? double(part) / double(whole) * 100 : 0.0);
  return b;
}

// A bucket (SiteGroup::kind) in words.
inline std::string memory_kind(const std::string& k) {
  if (k == "device") return "device memory";
  if (k == "pinned_host") return "pinned host memory";
  if (k == "managed") return "managed memory";
  if (k == "imported") return "imported memory";
  return k;
}

// An op kind of DevicePeak::by_kind in the words of the API that allocates it.
inline std::string op_kind(const std::string& k) {
  if (k == "device") return "cuMemAlloc";
  if (k == "async") return "stream-ordered";
  if (k == "vmm_physical") return "VMM";
  if (k == "array") return "arrays";
  if (k == "graph_pool") return "CUDA graph pool";
  return k;
}

}  // namespace vt::analyzer
