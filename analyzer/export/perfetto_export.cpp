// See perfetto_export.h. Chrome trace-event format: a JSON object whose "traceEvents" array
// holds events with ph (phase), ts/dur in microseconds (fractions keep nanoseconds), pid, tid.
#include "perfetto_export.h"

#include "terminal_escape.h"
#include "output_file.h"

#include <array>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <vector>

#include "byte_size.h"

#include "accounting.h"
#include "activity.h"
#include "activity_format.h"
#include "activity_stream.h"
#include "aggregators/torch_blocks.h"
#include "live_state.h"
#include "perfetto_stacks.h"
#include "torch_records.h"
#include "user_frames.h"
#include "trace_reader.h"

namespace vt::analyzer {

namespace {

namespace fmt = vt::format;

std::string quote(const std::string& s) { return json_string(s); }  // (terminal_escape.h)

// Numbers appended in place: the export writes one line per counter sample and drawn allocation,
// and a std::string per number was most of a line's cost (issue 43).
void put(std::string& out, uint64_t v, int base = 10) {
  char b[24];
  out.append(b, std::to_chars(b, b + sizeof b, v, base).ptr);
}
void put(std::string& out, int64_t v) {
  char b[24];
  out.append(b, std::to_chars(b, b + sizeof b, v).ptr);
}


class Writer {
 public:
  Writer(std::ostream& out, uint64_t t0) : out_(out), t0_(t0) {}

  // Microseconds since the trace began, with nanosecond decimals.
  std::string ts(uint64_t t) const {
    std::string s;
    put_ts(s, t);
    return s;
  }
  void put_ts(std::string& out, uint64_t t) const {
    // Unsigned: a crafted time 2^63 away from the start must not overflow.
    bool before = t < t0_;
    uint64_t a = before ? t0_ - t : t - t0_;
    if (before) out += '-';
    put_us(out, a);
  }
  static std::string dur(uint64_t ns) {
    std::string s;
    put_us(s, ns);
    return s;
  }
  // Nanoseconds as microseconds with three decimals (ts and dur).
  static void put_us(std::string& out, uint64_t ns) {
    put(out, ns / 1000);
    const unsigned r = unsigned(ns % 1000);
    const char frac[4] = {'.', char('0' + r / 100), char('0' + r / 10 % 10), char('0' + r % 10)};
    out.append(frac, 4);
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
  uint64_t max_total = 0;  // max.total()
  bool emitted = false;    // a sample was written; last_emitted holds its values
  std::array<uint64_t, kBuckets> last_emitted{};
};

// PyTorch's figures of one device as last drawn: a counter is written only when its figure changed.
struct TorchTrack {
  bool drawn = false;
  TorchFigures last;
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
        index_(base_),
        torch_(reader.process().pid, 1, 16) {  // (its own timelines and views go unused here)
    host_pid_ = int64_t(reader.process().pid);
    if (host_pid_ < 1024) host_pid_ += 1 << 22;  // never the same number as a device ordinal
  }

  void run() {
    names();
    uint64_t last_t = base_;
    while (const Record* next = reader_.next()) {
      const Record& r = *next;
      last_t = std::max(last_t, r.t_ns);
      if (r.is_event()) {
        on_event(r);
        InterceptedAllocation a;  // the cross-check only once CUPTI recorded (as the report does)
        if (cupti_on_ && intercepted_allocation(r, &a)) coverage_.intercepted(a);
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
        if (!cupti_on_ && r.tag == fmt::kTagCuptiStatus) cupti_on_ = index_.recorder().started;
      } else if (is_torch_record(r.tag)) {
        on_torch(r);
      } else if (r.tag == fmt::kTagRegion) {
        on_region(r);
      }
    }
    uint64_t end = std::max(last_t, reader_.process().end_monotonic_ns);
    for (auto& [dev, c] : counters_) flush_counter(dev, c);
    flush_instants();
    torch_.finish(&torch_report_);  // whether PyTorch's figures held to the end, and its peaks
    // Instants are drawn last, once every stack record has been read (a stack can be referenced
    // before its record arrives), so no up-front scan of the file: each stack is symbolized once.
    symbolizer_ = std::make_unique<Symbolizer>(reader_.stacks(), opt_.symbolizer);
    stacks_ = std::make_unique<PerfettoStacks>(*symbolizer_, opt_.max_frames);
    for (const Pending& p : drawn_) write_instant(p);
    torch_stopped();
    for (auto& [key, m] : merging_) flush_merge(key, m);
    for (const auto& [r, args] : unnamed_kernels_) kernel_slice(r, args);  // name record never came
    index_.finish(end);
    coverage_.finish();
    nvtx();
    thread_names();
  }

  void stack_frames(std::ostream& out) const { stacks_->write(out); }

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
    if (!rs.gaps.empty()) {  // another client held CUPTI, then let go (status kind 8)
      nlohmann::json gaps = nlohmann::json::array();
      for (const auto& [from, to] : rs.gaps)
        gaps.push_back({(double(from) - double(origin_)) / 1000.0, (double(to) - double(origin_)) / 1000.0});
      k["gaps_us"] = gaps;
      k["resumed"] = rs.resumed;
    }
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
                   {"allocations_merged", stats_.allocations_merged},
                   {"instants", stats_.instants},
                   {"stack_frames", stacks_ ? stacks_->nodes() : 0},
                   {"merged_slices", stats_.merged_slices},
                   {"pytorch_counter_samples", stats_.torch_samples},
                   {"tensor_instants", stats_.tensor_instants},
                   {"tensors_not_drawn", stats_.tensors_not_drawn},
                   {"tensors_merged", stats_.tensors_merged}};
    if (torch_report_.torch.present) j["pytorch"] = torch_data();
    j["problems"] = reader_.problems();
    out << json_text(j);
  }

 private:
  struct InstantKey {
    int64_t pid;
    uint32_t stack;  // the trace's stack id
    const OpInfo* op;  // nullptr: a tensor (PyTorch's block)
    uint64_t size;
    bool failed;  // a failure is never folded into a success's count
    bool operator==(const InstantKey& o) const {
      return pid == o.pid && stack == o.stack && op == o.op && size == o.size && failed == o.failed;
    }
  };
  struct InstantKeyHash {
    size_t operator()(const InstantKey& k) const {
      return std::hash<uint64_t>()(uint64_t(k.pid) * 0x9e3779b97f4a7c15ull ^ (uint64_t(k.stack) << 20) ^ k.size ^
                                   uint64_t(uintptr_t(k.op)) ^ uint64_t(k.failed));
    }
  };
  struct Pending {
    Record first;  // the first of the interval: its time, address and thread are drawn (a
                   // tensor's: its op null, its address and size those of the block)
    uint32_t stack;  // 0: drawn without one
    int64_t pid;
    uint64_t count;
  };
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
  // The counter interval holding t; the last one is remembered (a division per event showed in profiles).
  uint64_t window_of(uint64_t t) {
    if (!opt_.counter_interval_ns) return t;
    if (t >= win_lo_ && t - win_lo_ < opt_.counter_interval_ns) return win_;
    win_ = t / opt_.counter_interval_ns;
    win_lo_ = win_ * opt_.counter_interval_ns;
    return win_;
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
      CounterTrack& c = track(dev);
      if (c.pending ? same(c.last.v, v) : (c.emitted && same(c.last_emitted, v))) continue;
      sample(dev, c, r.t_ns, v);
    }
    if (changes_memory(r.result)) {
      torch_.after(r);  // segments come and go (as in the report's pass; one branch without PyTorch)
      if (__builtin_expect(!torch_tracks_.empty(), 0)) torch_counters(r.t_ns);  // a freed segment: reserved
    }
    instant(r);
  }

  // ---- PyTorch's block layer: its figures as counters, its big tensors as instants ----

  void on_torch(const Record& r) {
    TorchBlock b;
    const bool block = decode_torch_block(r, &b);
    if (block) torch_tracks_.try_emplace(b.device);  // a device's counters start at its first block
    TorchStatus status;
    if (decode_torch_status(r, &status) && !status.on) torch_off(r.t_ns);  // the recorder stopped recording blocks
    torch_.on_record(r, live_);
    torch_counters(r.t_ns);
    if (block && b.size > 0) tensor_instant(r, b);
  }

  // After every record that can change them: each figure that changed, exactly (no thinning).
  // Reserved first: a block in a new segment raises it with allocated.
  void torch_counters(uint64_t t) {
    if (torch_stopped_t_) return;
    for (auto& [dev, track] : torch_tracks_) {
      TorchFigures f;
      if (!torch_.figures_now(dev, &f)) {  // the analysis turned the figures off (the report's layer "off")
        torch_off(t);
        return;
      }
      int64_t pid = pid_of(dev);
      const TorchFigures& was = track.last;
      if (!track.drawn || f.reserved != was.reserved) torch_counter(pid, "PyTorch reserved", t, f.reserved);
      if (!track.drawn || f.allocated != was.allocated) torch_counter(pid, "PyTorch allocated", t, f.allocated);
      if (!track.drawn || f.inactive_split != was.inactive_split)
        torch_counter(pid, "PyTorch inactive split", t, f.inactive_split);
      track.drawn = true;
      track.last = f;
    }
  }

  void torch_counter(int64_t pid, const char* name, uint64_t t, uint64_t bytes) {
    ensure_gpu(pid);
    w_.event(std::string("\"ph\":\"C\",\"name\":\"") + name + "\",\"pid\":" + std::to_string(pid) + ",\"ts\":" + w_.ts(t) +
             ",\"args\":{\"bytes\":" + std::to_string(bytes) + "}");
    stats_.torch_samples++;
  }

  void torch_off(uint64_t t) {
    if (!torch_stopped_t_) torch_stopped_t_ = t;
  }

  // Where the figures stopped, on each device that had them: its counters hold their last value
  // from there on, which is no longer PyTorch's (the report shows driver-level figures only).
  void torch_stopped() {
    if (!torch_stopped_t_) return;
    std::string why = quote(torch_report_.torch.layer_detail);
    for (const auto& [dev, track] : torch_tracks_) {
      if (!track.drawn) continue;
      w_.event("\"ph\":\"i\",\"s\":\"p\",\"name\":\"PyTorch's figures stop here\",\"cat\":\"pytorch\",\"pid\":" +
               std::to_string(pid_of(dev)) + ",\"tid\":0,\"ts\":" + w_.ts(torch_stopped_t_) + ",\"args\":{\"why\":" + why + "}");
    }
  }

  nlohmann::json torch_data() const {
    const TorchReport& t = torch_report_.torch;
    nlohmann::json devices = nlohmann::json::array();
    for (const TorchDevice& d : t.devices)
      devices.push_back({{"device", d.device}, {"peak_allocated_bytes", d.peak_allocated},
                         {"peak_reserved_bytes", d.peak_reserved}});
    nlohmann::json j = {{"layer", t.layer.empty() ? "no block records" : t.layer},
                        {"layer_detail", t.layer_detail},
                        {"block_events", t.block_events},
                        {"devices", devices}};
    if (torch_stopped_t_) j["stopped_ts_us"] = (double(torch_stopped_t_) - double(origin_)) / 1000.0;
    return j;
  }

  // A vramtrace region's begin or end (the pytest plugin's tests, a workload's marks), in the pass:
  // the counters written before it are the state at that instant.
  void on_region(const Record& r) {
    RegionMark m;
    if (!decode_region(r, &m)) return;
    w_.event("\"ph\":\"i\",\"s\":\"p\",\"name\":" + quote(m.name.empty() ? "(unnamed region)" : m.name) +
             ",\"cat\":\"region\",\"pid\":" + std::to_string(host_pid_) + ",\"tid\":0,\"ts\":" + w_.ts(r.t_ns) +
             ",\"args\":{\"mark\":\"" + (m.begin ? "begin" : "end") + "\",\"tid\":" + std::to_string(r.tid) + "}");
  }

  CounterTrack& track(int dev) {  // the events of a stretch of time are mostly on one device
    if (last_track_ && last_dev_ == dev) return *last_track_;
    last_dev_ = dev;
    return *(last_track_ = &counters_[dev]);
  }

  void sample(int dev, CounterTrack& c, uint64_t t, const std::array<uint64_t, kBuckets>& v) {
    uint64_t window = window_of(t);
    if (c.pending && window != c.window) flush_counter(dev, c);
    uint64_t total = 0;
    for (uint64_t x : v) total += x;
    if (!c.pending || total > c.max_total) {
      if (!c.pending) c.window = window;
      c.pending = true;
      c.max_total = total;
      c.max.t = t;
      c.max.v = v;
    }
    c.last.t = t;
    c.last.v = v;
  }

  // std::array's == is a memcmp call; four words compare inline (once per event).
  static bool same(const std::array<uint64_t, kBuckets>& a, const std::array<uint64_t, kBuckets>& b) {
    bool eq = true;
    for (int i = 0; i < kBuckets; ++i) eq &= a[size_t(i)] == b[size_t(i)];
    return eq;
  }

  void flush_counter(int dev, CounterTrack& c) {
    if (!c.pending) return;
    emit_counter(dev, c.max);
    if (c.last.t != c.max.t) emit_counter(dev, c.last);
    c.last_emitted = c.last.v;
    c.emitted = true;
    c.pending = false;
  }

  void emit_counter(int dev, const CounterTrack::Sample& s) {
    int64_t pid = pid_of(dev);
    ensure_gpu(pid);
    std::string& l = line_;
    l.assign("\"ph\":\"C\",\"name\":\"driver memory\",\"pid\":");
    put(l, pid);
    l += ",\"ts\":";
    w_.put_ts(l, s.t);
    l += ",\"args\":{";
    for (int b = 0; b < kBuckets; ++b) {
      l += b ? ",\"" : "\"";
      l += bucket_name(Bucket(b));
      l += "\":";
      put(l, s.v[b]);
    }
    l += '}';
    w_.event(l);
    stats_.counter_samples++;
  }

  // Failed allocations, and allocations of at least the threshold: one instant per (device, call
  // stack, op, size, failed or not) per counter interval, at the first of them, with how many
  // there were in args.count (a loop of equal big allocations, or of retries of a failing one,
  // stays one mark per interval).
  void instant(const Record& r) {
    if (!r.op || r.op->action != Action::Acquire) return;
    bool failed = r.result != 0;
    if (!failed && !r.has(fmt::kEvSize)) return;
    if (!failed && r.size < opt_.alloc_threshold_bytes) {
      stats_.allocations_not_drawn++;
      return;
    }
    uint32_t stack = opt_.stacks ? r.stack : 0;
    int64_t pid = pid_of(r.device);
    if (!pend(r, stack, pid, InstantKey{pid, stack, r.op, r.size, failed})) stats_.allocations_merged++;
  }

  // A tensor of at least the threshold, drawn like a large allocation (cat "tensor").
  void tensor_instant(const Record& r, const TorchBlock& b) {
    if (uint64_t(b.size) < opt_.alloc_threshold_bytes) {
      stats_.tensors_not_drawn++;
      return;
    }
    Record first;  // the block as an allocation: no op, no payload (it lives only until the next read)
    first.tag = r.tag;
    first.t_ns = r.t_ns;
    first.tid = r.tid;
    first.device = b.device;
    first.addr = b.addr;
    first.size = uint64_t(b.size);
    first.fields = fmt::kEvAddr | fmt::kEvSize;
    uint32_t stack = opt_.stacks ? b.stack : 0;
    int64_t pid = pid_of(b.device);
    if (!pend(first, stack, pid, InstantKey{pid, stack, nullptr, first.size, false})) stats_.tensors_merged++;
  }

  // Adds an instant to this interval's, or counts it into an equal one; false when counted.
  bool pend(const Record& r, uint32_t stack, int64_t pid, const InstantKey& key) {
    ensure_gpu(pid);
    uint64_t window = window_of(r.t_ns);
    if (window != instant_window_) flush_instants();
    instant_window_ = window;
    auto [it, fresh] = pending_index_.try_emplace(key, pending_.size());
    if (fresh) {
      pending_.push_back({r, stack, pid, 1});
      return true;
    }
    pending_[it->second].count++;
    return false;
  }

  void flush_instants() {
    drawn_.insert(drawn_.end(), pending_.begin(), pending_.end());
    pending_.clear();
    pending_index_.clear();
  }

  void write_instant(const Pending& p) {
    const Record& r = p.first;
    const bool tensor = !r.op;
    bool failed = r.result != 0;
    uint32_t sf = p.stack ? stacks_->leaf(p.stack) : 0;
    std::string name = tensor ? "tensor " + format_bytes(r.size)
                              : std::string(failed ? "FAILED " : "") + r.op->name + " " + format_bytes(r.size);
    const char* cat = tensor ? "tensor" : failed ? "oom" : "allocation";
    std::string& l = line_;
    l.assign("\"ph\":\"i\",\"s\":\"p\",\"name\":");
    l += quote(name);
    l += ",\"cat\":\"";
    l += cat;
    l += "\",\"pid\":";
    put(l, p.pid);
    l += ",\"tid\":0,\"ts\":";
    w_.put_ts(l, r.t_ns);
    if (sf) {
      l += ",\"sf\":\"";
      put(l, uint64_t(sf));
      l += '"';
    }
    l += ",\"args\":{";
    if (!tensor) {
      l += "\"op\":";
      l += quote(r.op->name);
      l += ',';
    }
    l += "\"size\":";
    put(l, r.size);
    l += ",\"tid\":";
    put(l, uint64_t(r.tid));
    if (r.has(fmt::kEvAddr)) {
      l += ",\"address\":\"0x";
      put(l, r.addr, 16);
      l += '"';
    }
    if (failed) {
      l += ",\"result\":";
      put(l, int64_t(r.result));
      l += ",\"free_bytes\":";
      put(l, r.free_bytes);
      l += ",\"total_bytes\":";
      put(l, r.total_bytes);
    }
    l += ",\"count\":";
    put(l, uint64_t(p.count));
    if (sf) {
      l += ",\"site\":";  // the user's line; the whole stack is "sf"
      l += site(p.stack);
    }
    l += '}';
    w_.event(l);
    (tensor ? stats_.tensor_instants : stats_.instants)++;
  }

  const std::string& site(uint32_t stack) {
    auto [it, fresh] = sites_.try_emplace(stack);
    if (fresh) it->second = quote(user_line(symbolizer_->stack(stack)));
    return it->second;
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
  std::string line_;  // the line being written (emit_counter, write_instant): one buffer, reused
  ActivityIndex index_;
  int64_t host_pid_ = 0;
  std::unique_ptr<Symbolizer> symbolizer_;
  std::unique_ptr<PerfettoStacks> stacks_;
  std::vector<Pending> pending_;  // this interval's big allocations, in first-seen order
  std::vector<Pending> drawn_;    // every instant, written at the end (a few per counter interval)
  std::unordered_map<InstantKey, size_t, InstantKeyHash> pending_index_;
  uint64_t instant_window_ = 0;
  std::unordered_map<uint32_t, std::string> sites_;  // trace stack id -> quoted user line
  LiveState live_;
  std::map<int, CounterTrack> counters_;  // nodes stay put: track() remembers the last one
  int last_dev_ = 0;
  CounterTrack* last_track_ = nullptr;
  std::set<int64_t> named_pids_;
  std::set<std::pair<int64_t, uint32_t>> streams_;
  std::set<uint32_t> nvtx_threads_;
  std::unordered_map<uint32_t, std::string> kernel_names_;
  std::vector<std::pair<KernelActivity, std::string>> unnamed_kernels_;
  uint64_t win_ = 0, win_lo_ = ~0ull;  // window_of's memory
  bool cupti_on_ = false;    // allocations go to the coverage cross-check only then
  CoverageStream coverage_;  // a window of allocations, not all of them (activity_stream.h)
  TorchAggregator torch_;     // PyTorch's figures, by the report's own rules
  std::map<int, TorchTrack> torch_tracks_;  // devices with blocks; empty: no PyTorch cost per event
  uint64_t torch_stopped_t_ = 0;            // when the figures stopped (0: they did not)
  TraceReport torch_report_;                // its finish(): layer, peaks
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
  out << "\n],\"stackFrames\":";
  ex.stack_frames(out);
  out << ",\"otherData\":";
  ex.other_data(out);
  out << "}\n";
  stats->problems = reader->problems();
  stats->damage = reader->damage();
  return bool(out);
}

int export_perfetto_file(const std::string& trace, const std::string& out_path, const PerfettoOptions& opt,
                         std::string* error, PerfettoStats* stats) {
  OutputFile out;
  if (!out.open(out_path, {trace}, error)) return 1;
  // A trace that cannot be read says why; a write that failed, commit does (nothing is left behind).
  if (!export_perfetto(trace, out.stream(), opt, stats, error) && !error->empty()) return 1;
  return out.commit(error) ? 0 : 1;
}

}  // namespace vt::analyzer
