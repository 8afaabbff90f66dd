// See perfetto_export.h. Chrome trace-event format: a JSON object whose "traceEvents" array
// holds events with ph (phase), ts/dur in microseconds (fractions keep nanoseconds), pid, tid.
#include "perfetto_export.h"

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <vector>

#include "byte_size.h"

#include "activity.h"
#include "activity_format.h"
#include "activity_stream.h"
#include "live_state.h"
#include "trace_reader.h"

namespace vt::analyzer {

namespace {

namespace fmt = vt::format;

std::string quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}


class Writer {
 public:
  Writer(std::ostream& out, uint64_t t0) : out_(out), t0_(t0) {}

  // Microseconds since the trace began, with nanosecond decimals.
  std::string ts(uint64_t t) const {
    // Unsigned: a crafted time 2^63 away from the start must not overflow.
    bool before = t < t0_;
    uint64_t a = before ? t0_ - t : t - t0_;
    char buf[40];
    snprintf(buf, sizeof buf, "%s%llu.%03llu", before ? "-" : "", (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
    return buf;
  }
  static std::string dur(uint64_t ns) {
    char buf[40];
    snprintf(buf, sizeof buf, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
    return buf;
  }

  void event(const std::string& body) {
    out_ << (first_ ? "\n" : ",\n") << '{' << body << '}';
    first_ = false;
  }
  void process_name(int64_t pid, const std::string& name, int64_t sort) {
    event("\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) + ",\"args\":{\"name\":" + quote(name) + "}");
    event("\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(pid) +
          ",\"args\":{\"sort_index\":" + std::to_string(sort) + "}");
  }
  void thread_name(int64_t pid, uint64_t tid, const std::string& name) {
    event("\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
          ",\"args\":{\"name\":" + quote(name) + "}");
  }
  void slice(const std::string& name, const char* cat, int64_t pid, uint64_t tid, uint64_t start, uint64_t len,
             const std::string& args) {
    event("\"ph\":\"X\",\"name\":" + quote(name) + ",\"cat\":\"" + cat + "\",\"pid\":" + std::to_string(pid) +
          ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + ts(start) + ",\"dur\":" + dur(len) +
          (args.empty() ? "" : ",\"args\":{" + args + "}"));
  }

 private:
  std::ostream& out_;
  uint64_t t0_;
  bool first_ = true;
};

// Counter samples for one device: at most the window's max and its last value per interval.
struct CounterTrack {
  struct Sample {
    uint64_t t = 0;
    std::array<uint64_t, kBuckets> v{};
    uint64_t total() const {
      uint64_t s = 0;
      for (uint64_t x : v) s += x;
      return s;
    }
  };
  bool pending = false;
  uint64_t window = 0;
  Sample max, last;
};

class Exporter {
 public:
  // `origin`: time zero of the output (no record precedes it); base_ stays the header's start,
  // the clock CUPTI records are encoded against.
  Exporter(TraceReader& reader, std::ostream& out, const PerfettoOptions& opt, PerfettoStats* stats, uint64_t origin)
      : reader_(reader),
        opt_(opt),
        stats_(*stats),
        base_(reader.process().start_monotonic_ns),
        origin_(origin),
        w_(out, origin),
        index_(base_) {
    host_pid_ = int64_t(reader.process().pid);
    if (host_pid_ < 1024) host_pid_ += 1 << 22;  // never the same number as a device ordinal
  }

  void run() {
    if (opt_.stacks) reader_.load_stacks();
    symbolizer_ = std::make_unique<Symbolizer>(reader_.stacks(), opt_.symbolizer);
    names();
    Record r;
    uint64_t last_t = base_;
    while (reader_.next(&r)) {
      last_t = std::max(last_t, r.t_ns);
      if (r.is_event()) {
        on_event(r);
        InterceptedAllocation a;
        if (intercepted_allocation(r, &a)) coverage_.intercepted(a);
      } else if (r.tag == fmt::kTagCuptiMemory) {
        CuptiAllocation m;
        coverage_.advance(r.t_ns);
        if (decode_cupti_memory(r, base_, &m)) coverage_.cupti(m);
      } else if (r.tag == fmt::kTagKernelName) {
        uint32_t id;
        std::string name;
        if (decode_kernel_name(r, &id, &name)) kernel_names_[id] = demangle(name);
      } else if (r.tag == fmt::kTagKernel) {
        on_kernel(r);
      } else if (r.tag == fmt::kTagMemcpy || r.tag == fmt::kTagMemset) {
        on_copy(r);
      } else if (r.tag == fmt::kTagNvtx || r.tag == fmt::kTagCuptiStatus) {
        index_.add(r);  // ranges are paired at the end (an end can come much later)
      }
    }
    uint64_t end = std::max(last_t, reader_.process().end_monotonic_ns);
    for (auto& [dev, c] : counters_) flush_counter(dev, c);
    for (auto& [key, m] : merging_) flush_merge(key, m);
    for (const auto& [r, args] : unnamed_kernels_) kernel_slice(r, args);  // name record never came
    index_.finish(end);
    coverage_.finish();
    nvtx();
    thread_names();
  }

  void other_data(std::ostream& out) const {
    nlohmann::json j;
    const ProcessInfo& p = reader_.process();
    j["trace"] = reader_.path();
    j["pid"] = p.pid;
    j["argv"] = p.argv;
    j["hostname"] = p.hostname;
    j["host_pid_track"] = host_pid_;
    RecorderState rs = index_.recorder();
    nlohmann::json k = {{"recorded", rs.started},
                        {"stepped_aside", rs.stepped_aside},
                        {"lost_records", rs.lost_records},
                        {"refused_buffers", rs.refused_buffers}};
    if (rs.unavailable) k["unavailable"] = std::string(unavailable_reason_name(rs.reason)) + ": " + rs.detail;
    if (rs.stepped_aside) k["stepped_aside_ts_us"] = (double(rs.stepped_aside_ns) - double(origin_)) / 1000.0;
    if (coverage_.result().cupti_allocations) {  // did interception see every allocation CUPTI saw?
      const CoverageResult& c = coverage_.result();  // missed: the first 20
      nlohmann::json missed = nlohmann::json::array();
      for (size_t i = 0; i < c.missed.size() && i < 20; ++i)
        missed.push_back({{"address", c.missed[i].address}, {"bytes", c.missed[i].bytes},
                          {"kind", cupti_memory_kind_name(c.missed[i].memory_kind)},
                          {"ts_us", (double(c.missed[i].t_ns) - double(origin_)) / 1000.0}});
      k["coverage"] = {{"cupti_allocations", c.cupti_allocations}, {"matched", c.matched}, {"fraction", c.fraction},
                       {"size_mismatches", c.size_mismatches}, {"missed", missed}};
    }
    j["kernel_activity"] = k;
    j["policy"] = {{"counter_interval_ns", opt_.counter_interval_ns},
                   {"alloc_threshold_bytes", opt_.alloc_threshold_bytes},
                   {"min_slice_ns", opt_.min_slice_ns},
                   {"allocations_not_drawn", stats_.allocations_not_drawn},
                   {"merged_slices", stats_.merged_slices}};
    j["problems"] = reader_.problems();
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

 private:
  struct MergeKey {
    int64_t pid;
    uint64_t tid;
    bool operator<(const MergeKey& o) const { return pid != o.pid ? pid < o.pid : tid < o.tid; }
  };
  struct Merge {
    bool active = false;
    uint64_t start = 0, end = 0, count = 0;
    const char* what = "kernels";
    std::string first_name, first_args;  // a lone short slice is drawn as itself
    const char* first_cat = "";
  };

  void names() {
    const ProcessInfo& p = reader_.process();
    std::string exe = p.argv.empty() ? p.exe : p.argv[0];
    w_.process_name(host_pid_, "host: " + exe + " (pid " + std::to_string(p.pid) + ")", 0);
    for (const DeviceInfo& d : p.devices) {
      w_.process_name(d.ordinal, "GPU " + std::to_string(d.ordinal) + (d.name.empty() ? "" : ": " + d.name),
                      1 + int64_t(d.ordinal));  // an ordinal of INT_MAX (crafted) must not overflow
      named_pids_.insert(d.ordinal);
    }
  }
  int64_t pid_of(int32_t device) { return device < 0 ? host_pid_ : int64_t(device); }
  void ensure_gpu(int64_t pid) {
    if (pid != host_pid_ && named_pids_.insert(pid).second) w_.process_name(pid, "GPU " + std::to_string(pid), 1 + pid);
  }

  // ---- memory: counters and instants ----

  void on_event(const Record& r) {
    live_.apply(r);
    for (int dev : live_.changed()) {  // the others kept their values
      const std::array<uint64_t, kBuckets>& v = live_.find_device(dev)->bytes;
      auto& c = counters_[dev];
      if (c.pending ? c.last.v == v : (seen_.count(dev) && last_emitted_[dev] == v)) continue;
      sample(dev, c, r.t_ns, v);
    }
    instant(r);
  }

  void sample(int dev, CounterTrack& c, uint64_t t, const std::array<uint64_t, kBuckets>& v) {
    uint64_t window = opt_.counter_interval_ns ? t / opt_.counter_interval_ns : t;
    if (c.pending && window != c.window) flush_counter(dev, c);
    CounterTrack::Sample s{t, v};
    if (!c.pending) {
      c.pending = true;
      c.window = window;
      c.max = s;
    } else if (s.total() > c.max.total()) {
      c.max = s;
    }
    c.last = s;
    seen_.insert(dev);
  }

  void flush_counter(int dev, CounterTrack& c) {
    if (!c.pending) return;
    emit_counter(dev, c.max);
    if (c.last.t != c.max.t) emit_counter(dev, c.last);
    last_emitted_[dev] = c.last.v;
    c.pending = false;
  }

  void emit_counter(int dev, const CounterTrack::Sample& s) {
    int64_t pid = pid_of(dev);
    ensure_gpu(pid);
    std::string args;
    for (int b = 0; b < kBuckets; ++b)
      args += std::string(b ? "," : "") + "\"" + bucket_name(Bucket(b)) + "\":" + std::to_string(s.v[b]);
    w_.event("\"ph\":\"C\",\"name\":\"live bytes\",\"pid\":" + std::to_string(pid) + ",\"ts\":" + w_.ts(s.t) + ",\"args\":{" +
             args + "}");
    stats_.counter_samples++;
  }

  void instant(const Record& r) {
    if (!r.op || r.op->action != Action::Acquire) return;
    bool failed = r.result != 0;
    if (!failed && !r.has(fmt::kEvSize)) return;
    if (!failed && r.size < opt_.alloc_threshold_bytes) {
      stats_.allocations_not_drawn++;
      return;
    }
    nlohmann::json args = {{"op", r.op->name}, {"size", r.size}, {"tid", r.tid}};
    if (r.has(fmt::kEvAddr)) {
      char a[24];
      snprintf(a, sizeof a, "0x%llx", (unsigned long long)r.addr);
      args["address"] = a;
    }
    if (failed) {
      args["result"] = r.result;
      args["free_bytes"] = r.free_bytes;
      args["total_bytes"] = r.total_bytes;
    }
    if (opt_.stacks && r.stack) {
      nlohmann::json frames = nlohmann::json::array();
      for (const Frame& f : symbolizer_->stack(r.stack)) {
        if (frames.size() >= opt_.max_frames) break;
        std::string s = f.function;
        if (!f.file.empty()) s += " (" + f.file + ":" + std::to_string(f.line) + ")";
        else if (!f.module.empty()) s += " [" + f.module + "+0x" + hex(f.offset) + "]";
        frames.push_back(s);
      }
      args["stack"] = frames;
    }
    std::string name = std::string(failed ? "FAILED " : "") + r.op->name + " " + format_bytes(r.size);
    int64_t pid = pid_of(r.device);
    ensure_gpu(pid);
    w_.event("\"ph\":\"i\",\"s\":\"p\",\"name\":" + quote(name) + ",\"cat\":\"" + (failed ? "oom" : "allocation") +
             "\",\"pid\":" + std::to_string(pid) + ",\"tid\":0,\"ts\":" + w_.ts(r.t_ns) +
             ",\"args\":" + args.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    stats_.instants++;
  }

  static std::string hex(uint64_t v) {
    char b[20];
    snprintf(b, sizeof b, "%llx", (unsigned long long)v);
    return b;
  }

  // ---- kernels and copies ----

  void on_kernel(const Record& r) {
    KernelActivity k;
    if (!decode_kernel(r, base_, &k)) return;
    std::string args = "\"grid\":\"" + std::to_string(k.grid[0]) + "," + std::to_string(k.grid[1]) + "," +
                       std::to_string(k.grid[2]) + "\",\"block\":\"" + std::to_string(k.block[0]) + "," +
                       std::to_string(k.block[1]) + "," + std::to_string(k.block[2]) +
                       "\",\"registers\":" + std::to_string(k.registers) + ",\"shared_bytes\":" +
                       std::to_string(k.static_shared + k.dynamic_shared) + ",\"correlation\":" + std::to_string(k.correlation) +
                       ",\"context\":" + std::to_string(k.context);
    if (k.name_id && !kernel_names_.count(k.name_id)) {
      unnamed_kernels_.push_back({k, args});
      return;
    }
    kernel_slice(k, args);
  }

  void kernel_slice(const KernelActivity& k, const std::string& args) {
    stats_.kernels++;
    std::string name = k.name_id && kernel_names_.count(k.name_id) ? kernel_names_[k.name_id] : "kernel";
    place(name, "kernel", k.device, k.stream, k.start_ns, k.end_ns, args, "kernels");
  }

  void on_copy(const Record& r) {
    CopyActivity c;
    if (!decode_copy(r, base_, &c)) return;
    stats_.copies++;
    std::string name = c.is_memset ? "Memset " + format_bytes(c.bytes)
                                   : std::string("Memcpy ") + memcpy_kind_name(c.copy_kind) + " " + format_bytes(c.bytes);
    std::string args = "\"bytes\":" + std::to_string(c.bytes) + ",\"correlation\":" + std::to_string(c.correlation) +
                       ",\"async\":" + ((c.flags & 1) ? "true" : "false");
    place(name, c.is_memset ? "memset" : "memcpy", c.device, c.stream, c.start_ns, c.end_ns, args, "copies");
  }

  // Draws a slice, or folds a short one into its stream's running aggregate.
  void place(const std::string& name, const char* cat, uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
             const std::string& args, const char* what) {
    int64_t pid = int64_t(device);
    ensure_gpu(pid);
    streams_.insert({pid, stream});
    MergeKey key{pid, stream};
    if (opt_.min_slice_ns && end - start < opt_.min_slice_ns) {
      Merge& m = merging_[key];
      if (m.active && start >= m.start && start <= m.end + opt_.min_slice_ns && m.what == what) {
        m.end = std::max(m.end, end);
        m.count++;
        return;
      }
      flush_merge(key, m);
      m = Merge{true, start, end, 1, what, name, args, cat};
      return;
    }
    if (opt_.min_slice_ns) flush_merge(key, merging_[key]);
    w_.slice(name, cat, pid, stream, start, end - start, args);
  }

  void flush_merge(const MergeKey& key, Merge& m) {
    if (!m.active) return;
    m.active = false;
    if (m.count == 1) {
      w_.slice(m.first_name, m.first_cat, key.pid, key.tid, m.start, m.end - m.start, m.first_args);
      return;
    }
    std::string name = std::to_string(m.count) + " " + m.what + " (each < " + Writer::dur(opt_.min_slice_ns) + " us)";
    w_.slice(name, "merged", key.pid, key.tid, m.start, m.end - m.start, "\"count\":" + std::to_string(m.count));
    stats_.merged_slices++;
  }

  // ---- NVTX ----

  void nvtx() {
    for (const NvtxRange& r : index_.nvtx_ranges()) {
      nvtx_threads_.insert(r.thread);
      std::string args = "\"depth\":" + std::to_string(r.depth) + (r.domain.empty() ? "" : ",\"domain\":" + quote(r.domain)) +
                         (r.open ? ",\"open\":true" : "");
      w_.slice(r.name.empty() ? "(unnamed range)" : r.name, "nvtx", host_pid_, r.thread, r.start_ns, r.end_ns - r.start_ns,
               args);
      stats_.nvtx_ranges++;
    }
    for (const NvtxMarker& m : index_.nvtx_instants()) {
      nvtx_threads_.insert(m.object_b);
      w_.event("\"ph\":\"i\",\"s\":\"t\",\"name\":" + quote(m.name) + ",\"cat\":\"nvtx\",\"pid\":" + std::to_string(host_pid_) +
               ",\"tid\":" + std::to_string(m.object_b) + ",\"ts\":" + w_.ts(m.t_ns));
    }
  }

  void thread_names() {
    for (const auto& [pid, stream] : streams_) w_.thread_name(pid, stream, "stream " + std::to_string(stream));
    for (uint32_t t : nvtx_threads_) w_.thread_name(host_pid_, t, "NVTX thread " + std::to_string(t));
  }

  TraceReader& reader_;
  const PerfettoOptions& opt_;
  PerfettoStats& stats_;
  uint64_t base_;
  uint64_t origin_;
  Writer w_;
  ActivityIndex index_;
  int64_t host_pid_ = 0;
  std::unique_ptr<Symbolizer> symbolizer_;
  LiveState live_;
  std::map<int, CounterTrack> counters_;
  std::map<int, std::array<uint64_t, kBuckets>> last_emitted_;
  std::set<int> seen_;
  std::set<int64_t> named_pids_;
  std::set<std::pair<int64_t, uint32_t>> streams_;
  std::set<uint32_t> nvtx_threads_;
  std::unordered_map<uint32_t, std::string> kernel_names_;
  std::vector<std::pair<KernelActivity, std::string>> unnamed_kernels_;
  CoverageStream coverage_;  // a window of allocations, not all of them (activity_stream.h)
  std::map<MergeKey, Merge> merging_;
};

}  // namespace

bool export_perfetto(const std::string& trace, std::ostream& out, const PerfettoOptions& opt, PerfettoStats* stats,
                     std::string* error) {
  auto reader = TraceReader::open(trace, error);
  if (!reader) return false;
  // Time zero: the header's start, or the first record when that came earlier (the event that
  // opened the trace was timed before the header was written), so no timestamp is negative.
  uint64_t origin = reader->process().start_monotonic_ns;
  {
    std::string ignored;
    auto peek = TraceReader::open(trace, &ignored);
    Record first;
    if (peek && peek->next(&first) && first.t_ns < origin) origin = first.t_ns;
  }
  PerfettoStats local;
  if (!stats) stats = &local;
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  Exporter ex(*reader, out, opt, stats, origin);
  ex.run();
  out << "\n],\"otherData\":";
  ex.other_data(out);
  out << "}\n";
  return bool(out);
}

int export_perfetto_file(const std::string& trace, const std::string& out_path, const PerfettoOptions& opt,
                         std::string* error) {
  std::string tmp = out_path + ".tmp";
  {
    std::vector<char> buf(1 << 20);  // outlives the stream, which flushes into it when closed
    std::ofstream f;
    f.rdbuf()->pubsetbuf(buf.data(), std::streamsize(buf.size()));
    f.open(tmp, std::ios::binary | std::ios::trunc);
    if (!f) {
      *error = "cannot write " + tmp;
      return 1;
    }
    if (!export_perfetto(trace, f, opt, nullptr, error)) {
      f.close();
      std::remove(tmp.c_str());
      return 1;
    }
    f.flush();
    if (!f) {
      *error = "cannot write " + tmp;
      std::remove(tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), out_path.c_str()) != 0) {
    *error = "cannot rename " + tmp + " to " + out_path;
    std::remove(tmp.c_str());
    return 1;
  }
  return 0;
}

}  // namespace vt::analyzer
