// See fit.h.
#include "fit.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "allocator_model.h"
#include "byte_size.h"
#include "segment_watch.h"
#include "terminal_escape.h"
#include "torch_records.h"
#include "user_frames.h"
#include "whatif.h"

namespace vt::analyzer {

namespace {

namespace fmt = format;

// One run's request stream on its device, in order.
struct Stream {
  enum Kind : uint8_t { kAlloc, kFree, kEmptyCache, kOom };
  struct Event {
    Kind kind;
    uint32_t request;  // kAlloc, kFree, kOom: the index into requests
  };
  struct Request {
    uint32_t key = 0, occurrence = 0;  // the call site, and this request's order among its requests
    uint64_t size = 0;
    std::string where;  // the user's line
    uint64_t stream = 0;  // the cudaStream_t it was handed out on (PyTorch's pools are per stream)
  };
  std::vector<Event> events;
  std::vector<Request> requests;
  uint64_t peak_allocated = 0, peak_reserved = 0;
  bool oom = false;
};

// Call sites as strings, numbered across the runs.
using Keys = std::map<std::string, uint32_t>;

std::string site_key(const std::vector<Frame>& stack) {
  std::string k;
  for (const Frame& f : stack)
    if (f.python) {
      k = f.file + ":" + std::to_string(f.line);
      break;
    }
  int natives = 0;
  for (const Frame& f : stack) {
    if (f.python || natives++ >= 12) continue;
    char off[24];
    snprintf(off, sizeof off, "+%llx", static_cast<unsigned long long>(f.offset));
    k += "|" + f.module.substr(f.module.rfind('/') + 1) + off;
  }
  return k;
}

bool load(const std::string& path, int device, const SymbolizerOptions& symbols, Keys* keys, Stream* out,
          std::string* error) {
  std::unique_ptr<TraceReader> r = TraceReader::open(path, error);
  if (!r) return false;
  SegmentWatch watch;
  absl::flat_hash_map<uint64_t, uint32_t> live;  // address -> request
  std::vector<uint32_t> stacks;
  while (const Record* next = r->next()) {
    const Record& rec = *next;
    if (rec.is_event()) {
      if (watch.on_event(rec)) out->events.push_back({Stream::kEmptyCache, 0});  // (any device: see whatif.cpp)
      continue;
    }
    if (is_torch_block(rec.tag)) {
      TorchBlock b;
      if (!decode_torch_block(rec, &b) || b.device != device || b.size == 0) continue;
      out->peak_allocated = std::max(out->peak_allocated, b.total_allocated);
      out->peak_reserved = std::max(out->peak_reserved, b.total_reserved);
      watch.on_block(b.addr, uint64_t(b.size > 0 ? b.size : -b.size));
      if (b.size > 0) {
        uint32_t i = uint32_t(out->requests.size());
        out->requests.push_back({0, 0, b.requested ? b.requested : uint64_t(b.size), "", b.stream});
        stacks.push_back(b.stack);
        live[b.addr] = i;
        out->events.push_back({Stream::kAlloc, i});
      } else if (auto it = live.find(b.addr); it != live.end()) {
        out->events.push_back({Stream::kFree, it->second});
        live.erase(it);
      }
    } else if (rec.tag == fmt::kTagTorchOom) {
      TorchOom o;
      if (!decode_torch_oom(rec, &o) || o.device != device) continue;
      watch.on_block(0, 0);
      out->oom = true;
      uint32_t i = uint32_t(out->requests.size());
      out->requests.push_back({0, 0, uint64_t(o.size), ""});
      stacks.push_back(o.stack);
      out->events.push_back({Stream::kOom, i});
    }
  }
  if (out->requests.empty()) {
    *error = path + ": no PyTorch block requests on device " + std::to_string(device);
    return false;
  }
  Symbolizer sym(r->stacks(), symbols);
  absl::flat_hash_map<uint32_t, std::pair<uint32_t, std::string>> by_stack;  // stack -> (key, line)
  std::map<uint32_t, uint32_t> seen;                                          // key -> requests so far
  for (size_t i = 0; i < out->requests.size(); i++) {
    auto it = by_stack.find(stacks[i]);
    if (it == by_stack.end()) {
      const std::vector<Frame>& st = sym.stack(stacks[i]);
      std::string k = site_key(st);
      auto [kit, fresh] = keys->emplace(k, uint32_t(keys->size()));
      it = by_stack.emplace(stacks[i], std::make_pair(kit->second, user_line(st))).first;
    }
    Stream::Request& q = out->requests[i];
    q.key = it->second.first;
    q.where = it->second.second;
    q.occurrence = seen[q.key]++;
  }
  return true;
}

// A line through the points (least squares); one point: flat.
struct Line {
  double a = 0, b = 0;
  double at(double x) const { return a + b * x; }
};
Line fit_line(const std::vector<std::pair<double, double>>& pts) {
  if (pts.size() == 1) return {pts[0].second, 0};
  double n = double(pts.size()), sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (auto [x, y] : pts) sx += x, sy += y, sxx += x * x, sxy += x * y;
  double d = n * sxx - sx * sx;
  if (d == 0) return {sy / n, 0};
  double b = (n * sxy - sx * sy) / d;
  return {(sy - b * sx) / n, b};
}

class Fitter {
 public:
  Fitter(const std::vector<Stream>& runs, const std::vector<double>& batches, size_t use, size_t base)
      : base_(runs[base]) {
    // (key, occurrence) -> the sizes seen in the first `use` runs
    std::map<std::pair<uint32_t, uint32_t>, std::vector<std::pair<double, double>>> points;
    for (size_t r = 0; r < use; r++)
      for (const Stream::Request& q : runs[r].requests)
        points[{q.key, q.occurrence}].push_back({batches[r], double(q.size)});
    lines_.reserve(base_.requests.size());
    for (const Stream::Request& q : base_.requests) {
      auto it = points.find({q.key, q.occurrence});
      if (it == points.end() || it->second.size() < 2) {
        lines_.push_back({double(q.size), 0});
        unmatched_++;
        continue;
      }
      Line l = fit_line(it->second);
      for (auto [x, y] : it->second)
        if (std::fabs(l.at(x) - y) > 512) nonlinear_++;
      lines_.push_back(l);
      matched_++;
    }
  }
  uint64_t matched() const { return matched_; }
  uint64_t unmatched() const { return unmatched_; }
  uint64_t nonlinear() const { return nonlinear_; }

  FitPrediction replay(double batch, const AllocConf& conf, uint64_t total, uint64_t others) const {
    FitPrediction p;
    p.batch = batch;
    std::unique_ptr<AllocatorModel> model = make_allocator_model(conf, total, 0, [others] { return others; });
    AllocatorModel& m = *model;
    std::vector<uint64_t> handle(base_.requests.size(), 0);
    for (const Stream::Event& e : base_.events) {
      if (e.kind == Stream::kEmptyCache) {
        m.empty_cache();
        continue;
      }
      if (e.kind == Stream::kFree) {
        m.free(handle[e.request]);
        continue;
      }
      double v = lines_[e.request].at(batch);
      uint64_t size = v < 1 ? 1 : uint64_t(std::llround(v));
      uint64_t h = m.malloc(size, base_.requests[e.request].stream);
      if (e.kind == Stream::kOom) {  // the run failed here and went on: tried, then given back
        m.free(h);
        if (!h) {
          p.oom = true;
          p.oom_size = size;
          p.oom_where = base_.requests[e.request].where;
        }
        continue;
      }
      if (!h) {
        p.oom = true;
        p.oom_size = size;
        p.oom_where = base_.requests[e.request].where;
        break;
      }
      handle[e.request] = h;
    }
    p.peak_allocated = m.stats().peak_allocated;
    p.peak_reserved = m.stats().peak_reserved;
    return p;
  }

 private:
  const Stream& base_;
  std::vector<Line> lines_;
  uint64_t matched_ = 0, unmatched_ = 0, nonlinear_ = 0;
};

double rel(uint64_t a, uint64_t b) { return b ? std::fabs(double(a) - double(b)) / double(b) : 0; }

std::string batch_text(double b) {
  char buf[32];
  snprintf(buf, sizeof buf, "%g", b);
  return buf;
}

}  // namespace

bool run_fit(const FitOptions& opt, FitReport* out, std::string* error) {
  const size_t n = opt.traces.size();
  if (n < 2 || opt.batches.size() != n) {
    *error = "fit: give two or three traces and as many batch sizes (--batch 8,16,32)";
    return false;
  }
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return opt.batches[a] < opt.batches[b]; });
  for (size_t i = 0; i < n; i++)
    if (!(opt.batches[order[i]] > 0) || (i && opt.batches[order[i]] == opt.batches[order[i - 1]])) {
      *error = "fit: the batch sizes must be positive and distinct";
      return false;
    }
  // The largest run: its device, settings, and what else held the device (whatif.h's survey).
  const std::string& largest = opt.traces[order[n - 1]];
  WhatifOptions w;
  w.symbolizer = opt.symbolizer;
  WhatifReport base;
  if (!run_whatif(largest, w, &base, error)) return false;
  out->device = base.recorded.device;
  out->device_total = opt.device_memory ? opt.device_memory : base.recorded.device_total;
  out->held_by_others = base.recorded.fixed_others + base.recorded.outside_peak;
  out->alloc_conf = opt.conf_given ? opt.alloc_conf : base.recorded.alloc_conf;
  AllocConf conf;
  if (!parse_alloc_conf(out->alloc_conf, &conf, error)) return false;

  Keys keys;
  std::vector<Stream> runs(n);
  std::vector<double> batches(n);
  for (size_t i = 0; i < n; i++) {
    batches[i] = opt.batches[order[i]];
    if (!load(opt.traces[order[i]], out->device, opt.symbolizer, &keys, &runs[i], error)) return false;
    out->runs.push_back({opt.traces[order[i]], batches[i], runs[i].peak_allocated, runs[i].peak_reserved,
                         uint64_t(runs[i].requests.size()), runs[i].oom});
  }
  Fitter all(runs, batches, n, n - 1);
  out->matched = all.matched();
  out->unmatched = all.unmatched();
  out->linear = all.nonlinear() == 0;
  if (n >= 3) {  // the smaller runs predict the largest, on its own stream
    Fitter loo(runs, batches, n - 1, n - 1);
    out->checked = true;
    out->check = loo.replay(batches[n - 1], conf, out->device_total, out->held_by_others);
    out->allocated_error = rel(out->check.peak_allocated, runs[n - 1].peak_allocated);
    out->reserved_error = rel(out->check.peak_reserved, runs[n - 1].peak_reserved);
  }
  if (opt.target > 0) {
    out->has_target = true;
    out->target = all.replay(opt.target, conf, out->device_total, out->held_by_others);
  }
  if (opt.max_batch) {
    out->has_max = true;
    auto fits = [&](double b) { return !all.replay(b, conf, out->device_total, out->held_by_others).oom; };
    double lo = 0, hi = std::max(1.0, std::floor(batches[n - 1]));
    if (fits(hi)) {
      lo = hi;
      while (hi < (1 << 24) && fits(hi * 2)) lo = hi *= 2;
      hi = lo * 2;
    } else {
      lo = 0;
    }
    while (hi - lo > 1) {  // lo fits, hi does not (integers)
      double mid = std::floor((lo + hi) / 2);
      if (fits(mid)) lo = mid;
      else hi = mid;
    }
    out->max_batch = lo;
  }
  out->limits.push_back("the request stream at another batch size is the largest run's, in its order, each request "
                        "at its fitted size: code that allocates differently at that size is not foreseen");
  if (out->unmatched)
    out->limits.push_back(std::to_string(out->unmatched) + " of the largest run's " +
                          std::to_string(runs[n - 1].requests.size()) +
                          " requests were not seen in another run and keep their size");
  if (!out->linear) out->limits.push_back("some requests do not grow linearly with the batch: their line is a least-squares fit");
  if (n < 3) out->limits.push_back("two runs fit any line: a third run gives the margin of error");
  return true;
}

bool parse_batch_sizes(const std::string& text, std::vector<double>* out) {
  out->clear();
  for (size_t at = 0;;) {
    size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    double b = strtod(item.c_str(), &end);
    if (item.empty() || *end || !(b > 0) || !std::isfinite(b)) return false;
    out->push_back(b);
    if (comma == std::string::npos) return true;
    at = comma + 1;
  }
}

std::string fit_text(const FitReport& r) {
  std::string t = "vramtrace fit: " + std::to_string(r.runs.size()) + " runs, device " + std::to_string(r.device) + " (" +
                  format_bytes(r.device_total) + "), " +
                  (r.alloc_conf.empty() ? std::string("PyTorch's defaults") : "PYTORCH_CUDA_ALLOC_CONF=" + terminal_escape(r.alloc_conf)) +
                  "; " + format_bytes(r.held_by_others) + " held outside PyTorch's cache\n";
  for (const FitReport::Run& run : r.runs)
    t += "  batch " + batch_text(run.batch) + ": peak allocated " + format_bytes(run.peak_allocated) + ", peak reserved " +
         format_bytes(run.peak_reserved) + " (recorded" + (run.oom ? ", with an OOM" : "") + ")\n";
  t += "  " + std::to_string(r.matched) + " of the largest run's requests matched across the runs, fitted as lines in the batch size\n";
  if (r.checked) {
    char buf[160];
    snprintf(buf, sizeof buf, "within %.1f%% (allocated) and %.1f%% (reserved)", 100 * r.allocated_error, 100 * r.reserved_error);
    t += "  check: the smaller runs predict batch " + batch_text(r.runs.back().batch) + "'s peaks " + buf + "\n";
  }
  auto pred = [&](const FitPrediction& p) {
    std::string s = "batch " + batch_text(p.batch) + ": peak allocated " + format_bytes(p.peak_allocated) + ", peak reserved " +
                    format_bytes(p.peak_reserved) + " of " + format_bytes(r.device_total);
    if (p.oom)
      s += ": runs out of memory (" + format_bytes(p.oom_size) + (p.oom_where.empty() ? "" : " at " + terminal_escape(p.oom_where)) + ")";
    else
      s += ": fits";
    return s;
  };
  if (r.has_target) t += "\n" + pred(r.target) + "\n";
  if (r.has_max)
    t += (r.has_target ? "" : "\n") + std::string("the largest batch that fits: ") + batch_text(r.max_batch) +
         (r.max_batch == 0 ? " (not even 1: the fixed part of the script does not fit)" : "") + "\n";
  t += "\nwhat the fit cannot know:\n";
  for (const std::string& l : r.limits) t += "  - " + l + "\n";
  return t;
}

std::string fit_json(const FitReport& r) {
  nlohmann::json runs = nlohmann::json::array();
  for (const FitReport::Run& run : r.runs)
    runs.push_back({{"trace", run.trace}, {"batch", run.batch}, {"peak_allocated_bytes", run.peak_allocated},
                    {"peak_reserved_bytes", run.peak_reserved}, {"requests", run.requests}, {"oom", run.oom}});
  auto pred = [](const FitPrediction& p) {
    return nlohmann::json{{"batch", p.batch},
                          {"peak_allocated_bytes", p.peak_allocated},
                          {"peak_reserved_bytes", p.peak_reserved},
                          {"fits", !p.oom},
                          {"oom", p.oom ? nlohmann::json{{"size_bytes", p.oom_size}, {"where", p.oom_where}} : nlohmann::json(nullptr)}};
  };
  nlohmann::json j = {{"schema", "vramtrace.fit/1"},
                      {"device", r.device},
                      {"device_memory_bytes", r.device_total},
                      {"held_outside_pytorch_bytes", r.held_by_others},
                      {"alloc_conf", r.alloc_conf},
                      {"runs", runs},
                      {"matched_requests", r.matched},
                      {"unmatched_requests", r.unmatched},
                      {"linear", r.linear},
                      {"check", r.checked ? nlohmann::json{{"predicted", pred(r.check)},
                                                           {"allocated_error", r.allocated_error},
                                                           {"reserved_error", r.reserved_error}}
                                          : nlohmann::json(nullptr)},
                      {"target", r.has_target ? pred(r.target) : nlohmann::json(nullptr)},
                      {"max_batch", r.has_max ? nlohmann::json(r.max_batch) : nlohmann::json(nullptr)},
                      {"limits", r.limits}};
  return json_text(j, 2) + "\n";
}

}  // namespace vt::analyzer
