// See torch_snapshot.h.
#include "torch_snapshot.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <absl/container/flat_hash_map.h>

#include "output_file.h"
#include "pickle_writer.h"
#include "torch_records.h"
#include "trace_reader.h"

namespace vt::analyzer {

namespace {

namespace fmt = format;

constexpr uint64_t kSmallSegment = 2ull << 20;  // PyTorch's small pool allocates 2 MiB segments

// A driver allocation with an address and a size of its own: what can hold PyTorch's blocks, and
// what is exported as memory outside PyTorch.
bool is_allocation_kind(MemKind k) { return k == MemKind::Device || k == MemKind::Managed || k == MemKind::Async; }

struct DriverAlloc {
  uint64_t size = 0, t_ns = 0;
  int device = 0;
  uint32_t stack = 0;
  bool torch = false;  // held a PyTorch block at some time (pass 1's verdict)
};

struct Block {
  uint64_t size = 0;
  uint32_t stack = 0;
  int device = 0;
};

// Pass 1's verdicts: which driver allocations (address, time) were PyTorch's segments.
struct SegmentKey {
  uint64_t addr, t_ns;
  bool operator<(const SegmentKey& o) const { return addr != o.addr ? addr < o.addr : t_ns < o.t_ns; }
};

// The allocation containing [addr, addr + size), or end().
std::map<uint64_t, DriverAlloc>::iterator containing(std::map<uint64_t, DriverAlloc>& m, uint64_t addr, uint64_t size) {
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return m.end();
  --it;
  return addr + size <= it->first + it->second.size ? it : m.end();
}

// A temporary file, removed from its folder as soon as it is open: nothing is left behind.
std::unique_ptr<std::fstream> temporary_file() {
  const char* dir = getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/vramtrace-snapshot.XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) return nullptr;
  auto f = std::make_unique<std::fstream>(path, std::ios::in | std::ios::out | std::ios::binary | std::ios::trunc);
  unlink(path.c_str());
  close(fd);
  if (!*f) return nullptr;
  return f;
}

class Exporter {
 public:
  Exporter(const TorchSnapshotOptions& opt, TorchSnapshotStats* stats) : opt_(opt), stats_(*stats) {}

  bool pass1(TraceReader& r) {
    std::map<uint64_t, DriverAlloc> live;
    while (const Record* next = r.next()) {
      const Record& rec = *next;
      if (rec.is_event()) {
        if (!rec.op || rec.result != 0 || !is_allocation_kind(rec.op->kind)) continue;
        if (rec.op->action == Action::Acquire && rec.size > 0) {
          live[rec.addr] = DriverAlloc{rec.size, rec.t_ns, rec.device, rec.stack, false};
        } else if (rec.op->action == Action::Release) {
          live.erase(rec.addr);
        }
      } else if (rec.tag == fmt::kTagTorchBlock) {
        TorchBlock b;
        if (!decode_torch_block(rec, &b)) continue;
        stats_.block_layer = true;
        if (b.size <= 0) continue;
        auto it = containing(live, b.addr, uint64_t(b.size));
        if (it != live.end() && !it->second.torch) {
          it->second.torch = true;
          torch_segments_.insert(SegmentKey{it->first, it->second.t_ns});
        }
      } else if (rec.tag == fmt::kTagTorchConfig) {
        decode_torch_config(rec, &config_);
      }
    }
    stats_.problems = r.problems();
    return true;
  }

  // Pass 2: the actions, per device, into temporary files; the live state at the end.
  bool pass2(TraceReader& r, Symbolizer& sym, std::string* error) {
    sym_ = &sym;
    const ProcessInfo& p = r.process();
    realtime_ = p.start_realtime_ns;
    monotonic_ = p.start_monotonic_ns;
    while (const Record* next = r.next()) {
      const Record& rec = *next;
      if (rec.is_event()) {
        if (!rec.op || rec.result != 0 || !is_allocation_kind(rec.op->kind)) continue;
        if (rec.op->action == Action::Acquire && rec.size > 0) {
          bool torch = torch_segments_.count(SegmentKey{rec.addr, rec.t_ns}) > 0;
          live_[rec.addr] = DriverAlloc{rec.size, rec.t_ns, rec.device, rec.stack, torch};
          if (torch) {
            action(rec.device, "segment_alloc", rec.addr, rec.size, rec.t_ns, rec.stack, false);
          } else if (!opt_.torch_only) {
            action(rec.device, "segment_alloc", rec.addr, rec.size, rec.t_ns, rec.stack, true);
            action(rec.device, "alloc", rec.addr, rec.size, rec.t_ns, rec.stack, true);
          }
        } else if (rec.op->action == Action::Release) {
          auto it = live_.find(rec.addr);
          if (it == live_.end()) continue;
          const DriverAlloc a = it->second;
          live_.erase(it);
          if (a.torch) {
            action(a.device, "segment_free", rec.addr, a.size, rec.t_ns, rec.stack, false);
          } else if (!opt_.torch_only) {
            action(a.device, "free_requested", rec.addr, a.size, rec.t_ns, rec.stack, true);
            action(a.device, "free_completed", rec.addr, a.size, rec.t_ns, rec.stack, true);
            action(a.device, "segment_free", rec.addr, a.size, rec.t_ns, rec.stack, true);
          }
        }
      } else if (rec.tag == fmt::kTagTorchBlock) {
        TorchBlock b;
        if (!decode_torch_block(rec, &b)) continue;
        if (b.size > 0) {
          blocks_[b.addr] = Block{uint64_t(b.size), b.stack, b.device};
          if (containing(live_, b.addr, uint64_t(b.size)) == live_.end()) stats_.blocks_without_segment++;
          action(b.device, "alloc", b.addr, uint64_t(b.size), rec.t_ns, b.stack, false);
        } else {
          auto it = blocks_.find(b.addr);
          uint64_t size = it != blocks_.end() ? it->second.size : uint64_t(-b.size);
          if (it != blocks_.end()) blocks_.erase(it);
          action(b.device, "free_requested", b.addr, size, rec.t_ns, b.stack, false);
          action(b.device, "free_completed", b.addr, size, rec.t_ns, b.stack, false);
        }
      } else if (rec.tag == fmt::kTagTorchOom) {
        TorchOom o;
        if (!decode_torch_oom(rec, &o)) continue;
        action(o.device, "oom", 0, uint64_t(o.size), rec.t_ns, o.stack, false, o.device_free, true);
      }
    }
    if (!tmp_ok_) {
      *error = "cannot create a temporary file for the actions (TMPDIR)";
      return false;
    }
    for (auto& [dev, list] : lists_) {
      list.writer->end();
      list.writer->flush_only();
      list.file->flush();
      if (!*list.file) {
        *error = "cannot write the temporary file of device " + std::to_string(dev) + "'s actions (TMPDIR full?)";
        return false;
      }
    }
    return true;
  }

  bool write(std::ostream& out, std::string* error) {
    PickleWriter w(out);
    w.begin_dict();
    w.string("segments");
    segments(w);
    w.string("device_traces");
    w.begin_list();
    int last = lists_.empty() ? -1 : lists_.rbegin()->first;
    for (int dev = 0; dev <= last; ++dev) {  // indexed by device ordinal, as PyTorch's
      auto it = lists_.find(dev);
      if (it == lists_.end()) {
        w.begin_list();
        w.end();
        continue;
      }
      std::fstream& f = *it->second.file;
      f.seekg(0);
      bool read = w.raw_value([&](std::ostream& o) {
        o << f.rdbuf();
        return bool(o);
      });
      if (!read) {
        *error = "cannot copy device " + std::to_string(dev) + "'s actions into the snapshot";
        return false;
      }
    }
    w.end();
    w.string("allocator_settings");
    allocator_settings(w);
    w.string("external_annotations");
    w.begin_list();
    w.end();
    w.string("vramtrace");
    about(w);
    w.end();
    if (!w.finish()) {
      *error = "cannot write the snapshot";
      return false;
    }
    return true;
  }

 private:
  struct List {
    std::unique_ptr<std::fstream> file;
    std::unique_ptr<PickleWriter> writer;
    absl::flat_hash_map<uint32_t, uint32_t> memo;  // stack id -> memo index of its frame list
    absl::flat_hash_map<uint32_t, uint32_t> outside_memo;
  };

  List& list(int device) {
    List& l = lists_[device];
    if (!l.writer) {
      l.file = temporary_file();
      if (!l.file) {
        tmp_ok_ = false;
        l.file = std::make_unique<std::fstream>();  // (fails every write; pass2 reports it)
      }
      l.writer = std::make_unique<PickleWriter>(*l.file, /*fragment=*/true);
      l.writer->begin_list();
    }
    return l;
  }

  uint64_t time_us(uint64_t t_ns) const {
    return (realtime_ + (t_ns >= monotonic_ ? t_ns - monotonic_ : 0)) / 1000;
  }

  void action(int device, const char* what, uint64_t addr, uint64_t size, uint64_t t_ns, uint32_t stack, bool outside,
              uint64_t device_free = 0, bool oom = false) {
    if (device < 0) device = 0;
    List& l = list(device);
    PickleWriter& w = *l.writer;
    w.begin_dict();
    w.string("action");
    w.string(what);
    if (!oom) {
      w.string("addr");
      w.unsigned_integer(addr);
    }
    w.string("size");
    w.unsigned_integer(size);
    w.string("stream");
    w.integer(0);
    w.string("time_us");
    w.unsigned_integer(time_us(t_ns));
    if (oom) {
      w.string("device_free");
      w.unsigned_integer(device_free);
    }
    w.string("frames");
    frames(w, outside ? l.outside_memo : l.memo, stack, outside);
    w.end();
    stats_.actions++;
  }

  // A stack's frames, written once per list and recalled after that.
  void frames(PickleWriter& w, absl::flat_hash_map<uint32_t, uint32_t>& memo, uint32_t stack, bool outside) {
    auto it = memo.find(stack);
    if (it != memo.end()) return w.recall(it->second);
    uint32_t index = next_memo_++;
    memo.emplace(stack, index);
    stats_.stacks++;
    w.begin_list();
    if (outside) frame(w, "<outside PyTorch: " + owner(stack) + ">", 0, "cuMemAlloc");
    const std::vector<Frame>& all = stack ? sym_->stack(stack) : kNone;
    size_t n = 0;
    for (const Frame& f : all)
      if (f.python && n < opt_.max_frames) frame(w, f.file, f.line, f.function), ++n;
    if (opt_.native)
      for (const Frame& f : all)
        if (!f.python && n < opt_.max_frames) frame(w, f.file.empty() ? f.module : f.file, f.line, f.function), ++n;
    w.end(index);
  }

  static void frame(PickleWriter& w, const std::string& file, int line, const std::string& name) {
    w.begin_dict();
    w.string("name");
    w.string(name);
    w.string("filename");
    w.string(file);
    w.string("line");
    w.integer(line);
    w.end();
  }

  // Whose memory outside PyTorch this is: the library that called the driver (the innermost native
  // frame that is not CUDA's runtime or driver, nor ours), by file name.
  std::string owner(uint32_t stack) {
    if (!stack) return "unknown (no stack)";
    for (const Frame& f : sym_->stack(stack)) {
      if (f.python || f.module.empty()) continue;
      std::string base = f.module.substr(f.module.rfind('/') + 1);
      if (base.rfind("libcuda.so", 0) == 0 || base.rfind("libcudart", 0) == 0 || base.rfind("libvramtrace", 0) == 0) continue;
      return base;
    }
    return "unknown";
  }

  void segments(PickleWriter& w) {
    w.begin_list();
    std::vector<std::pair<std::pair<int, uint64_t>, const DriverAlloc*>> order;
    for (const auto& [addr, a] : live_)
      if (a.torch || !opt_.torch_only) order.push_back({{a.device, addr}, &a});
    std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [key, a] : order) {
      const uint64_t base = key.second;
      w.begin_dict();
      w.string("device");
      w.integer(a->device);
      w.string("address");
      w.unsigned_integer(base);
      w.string("total_size");
      w.unsigned_integer(a->size);
      uint64_t used = 0;
      std::vector<std::tuple<uint64_t, uint64_t, uint32_t, bool>> pieces;  // (addr, size, stack, allocated)
      if (a->torch) {
        uint64_t at = base;
        for (auto it = blocks_.lower_bound(base); it != blocks_.end() && it->first < base + a->size; ++it) {
          if (it->first > at) pieces.emplace_back(at, it->first - at, 0, false);
          pieces.emplace_back(it->first, it->second.size, it->second.stack, true);
          used += it->second.size;
          at = it->first + it->second.size;
        }
        if (at < base + a->size) pieces.emplace_back(at, base + a->size - at, 0, false);
      } else {
        pieces.emplace_back(base, a->size, a->stack, true);
        used = a->size;
        stats_.outside_segments++;
      }
      for (const char* k : {"allocated_size", "active_size", "requested_size"}) {
        w.string(k);
        w.unsigned_integer(used);
      }
      w.string("stream");
      w.integer(0);
      w.string("segment_type");
      w.string(a->size <= kSmallSegment ? "small" : "large");
      w.string("segment_pool_id");
      w.tuple_begin();
      w.integer(0);
      w.integer(0);
      w.tuple_end(2);
      w.string("is_expandable");
      w.boolean(false);
      w.string("frames");
      frames_inline(w, a->stack, !a->torch);
      if (!a->torch) {
        w.string("vramtrace_owner");
        w.string(owner(a->stack));
      }
      w.string("blocks");
      w.begin_list();
      for (const auto& [addr, size, stack, allocated] : pieces) {
        w.begin_dict();
        w.string("address");
        w.unsigned_integer(addr);
        w.string("size");
        w.unsigned_integer(size);
        w.string("requested_size");
        w.unsigned_integer(allocated ? size : 0);
        w.string("state");
        w.string(allocated ? "active_allocated" : "inactive");
        w.string("frames");
        if (allocated) frames_inline(w, stack, !a->torch);
        else w.begin_list(), w.end();
        w.end();
        stats_.blocks++;
      }
      w.end();
      w.end();
      stats_.segments++;
    }
    w.end();
  }

  // Frames in the main pickle (its memo is its own: the device lists' indices live in theirs).
  void frames_inline(PickleWriter& w, uint32_t stack, bool outside) {
    frames(w, outside ? main_outside_memo_ : main_memo_, stack, outside);
  }

  void allocator_settings(PickleWriter& w) {
    w.begin_dict();
    w.string("PYTORCH_CUDA_ALLOC_CONF");
    w.string(config_.cuda_alloc_conf.empty() ? config_.alloc_conf : config_.cuda_alloc_conf);
    w.string("expandable_segments");
    const std::string& conf = config_.cuda_alloc_conf.empty() ? config_.alloc_conf : config_.cuda_alloc_conf;
    w.boolean(conf.find("expandable_segments:True") != std::string::npos);
    w.end();
  }

  void about(PickleWriter& w) {
    w.begin_dict();
    w.string("block_layer");
    w.boolean(stats_.block_layer);
    w.string("note");
    w.string(stats_.block_layer
                 ? "exported by vramtrace from a trace: alloc sizes and requested_size are the allocator's rounded "
                   "block sizes, stream is 0 (the hook sees neither the request nor the stream)"
                 : "exported by vramtrace from a trace without PyTorch's block records (no PyTorch, its "
                   "cudaMallocAsync backend, or the layer off): each device allocation is a segment with one block");
    w.string("outside_pytorch");
    w.boolean(!opt_.torch_only);
    w.end();
  }

  static inline const std::vector<Frame> kNone{};
  const TorchSnapshotOptions& opt_;
  TorchSnapshotStats& stats_;
  Symbolizer* sym_ = nullptr;
  std::set<SegmentKey> torch_segments_;
  TorchConfig config_;
  uint64_t realtime_ = 0, monotonic_ = 0;
  std::map<uint64_t, DriverAlloc> live_;
  std::map<uint64_t, Block> blocks_;
  std::map<int, List> lists_;
  uint32_t next_memo_ = 0;  // one memo for the whole pickle: the device lists are embedded in it
  bool tmp_ok_ = true;
  absl::flat_hash_map<uint32_t, uint32_t> main_memo_, main_outside_memo_;
};

}  // namespace

int export_torch_snapshot_file(const std::string& trace, const std::string& out_path, const TorchSnapshotOptions& opt,
                               std::string* error, TorchSnapshotStats* stats) {
  TorchSnapshotStats local;
  if (!stats) stats = &local;
  std::unique_ptr<TraceReader> first = TraceReader::open(trace, error);
  if (!first) return 2;
  Exporter ex(opt, stats);
  ex.pass1(*first);
  std::unique_ptr<TraceReader> second = TraceReader::open(trace, error);
  if (!second) return 2;
  Symbolizer sym(first->stacks(), opt.symbolizer);
  if (!ex.pass2(*second, sym, error)) return 2;
  OutputFile out;
  if (!out.open(out_path, {trace}, error)) return 2;
  if (!ex.write(out.stream(), error) || !out.commit(error)) return 2;
  return 0;
}

}  // namespace vt::analyzer
