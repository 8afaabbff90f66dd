// See torch_snapshot.h.
#include "torch_snapshot.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <absl/container/flat_hash_map.h>

#include "live_state.h"
#include "output_file.h"
#include "pickle_writer.h"
#include "torch_free_blocks.h"
#include "torch_records.h"
#include "trace_reader.h"

namespace vt::analyzer {

namespace {

namespace fmt = format;

constexpr uint64_t kSmallSegment = 2ull << 20;  // PyTorch's small pool allocates 2 MiB segments
constexpr uint64_t kSmallBlock = 1ull << 20;    // and holds blocks of 1 MiB or less
// device_traces is a list indexed by device ordinal, and PyTorch's device indexes are 0-127
// (c10::DeviceIndex): what a damaged trace puts on a larger ordinal is left out (and said),
// rather than written after millions of empty lists. A negative one counts as device 0.
constexpr int kMaxDevices = 128;
int device_slot(int device) { return device < 0 ? 0 : device; }

// A driver allocation with an address and a size of its own: what can hold PyTorch's blocks, and
// what is exported as memory outside PyTorch.
bool is_allocation_kind(MemKind k) { return k == MemKind::Device || k == MemKind::Managed || k == MemKind::Async; }

struct DriverAlloc {
  uint64_t size = 0, t_ns = 0;
  int device = 0;
  uint32_t stack = 0;
  bool torch = false;   // held a PyTorch block at some time (pass 1's verdict)
  uint64_t stream = 0;  // a PyTorch segment's: the stream of its first block (PyTorch's pools are per stream)
};

struct Block {
  uint64_t size = 0;
  uint32_t stack = 0;
  int device = 0;
  uint64_t requested = 0;  // what the program asked for (the size, where the trace does not say)
  uint64_t stream = 0;
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

// The folder of the temporary files (TMPDIR, else /tmp).
std::string temporary_dir() {
  const char* dir = getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

// A temporary file, removed from its folder as soon as it is open: nothing is left behind.
std::unique_ptr<std::fstream> temporary_file() {
  std::string path = temporary_dir() + "/vramtrace-snapshot.XXXXXX";
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
    std::map<uint64_t, DriverAlloc> live, reserved;
    while (const Record* next = r.next()) {
      const Record& rec = *next;
      if (rec.is_event() && rec.op && rec.result == 0 && rec.op->kind == MemKind::VmmReservation) {
        if (rec.op->action == Action::Acquire && rec.size > 0) reserved[rec.addr] = DriverAlloc{rec.size, rec.t_ns, rec.device, 0, false};
        else if (rec.op->action == Action::Release) reserved.erase(rec.addr);
        continue;
      }
      if (rec.is_event()) {
        if (!rec.op || rec.result != 0 || !is_allocation_kind(rec.op->kind)) continue;
        if (rec.op->action == Action::Acquire && rec.size > 0) {
          live[rec.addr] = DriverAlloc{rec.size, rec.t_ns, rec.device, rec.stack, false};
        } else if (rec.op->action == Action::Release) {
          live.erase(rec.addr);
        }
      } else if (is_torch_block(rec.tag)) {
        TorchBlock b;
        if (!decode_torch_block(rec, &b)) continue;
        stats_.block_layer = true;
        if (b.size <= 0) continue;
        auto it = containing(live, b.addr, uint64_t(b.size));
        if (it != live.end() && !it->second.torch) {
          it->second.torch = true;
          torch_segments_[SegmentKey{it->first, it->second.t_ns}] = b.stream;
        } else if (it == live.end()) {  // an expandable segment: a VMM reservation PyTorch maps into
          auto res = containing(reserved, b.addr, uint64_t(b.size));
          if (res != reserved.end() && !res->second.torch) {
            res->second.torch = true;
            torch_reservations_[SegmentKey{res->first, res->second.t_ns}] =
                TorchReservation{b.device, uint64_t(b.size) <= kSmallBlock, b.stream};
          }
        }
      } else if (rec.tag == fmt::kTagTorchConfig) {
        decode_torch_config(rec, &config_);
      } else if (TorchStatus st; rec.tag == fmt::kTagTorchStatus && decode_torch_status(rec, &st) && st.on) {
        stats_.streams_known = st.message.find("; streams seen") != std::string::npos;
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
    for (const DeviceInfo& d : p.devices) driver_.set_device_total(d.ordinal, d.total_bytes);
    while (const Record* next = r.next()) {
      const Record& rec = *next;
      end_ns_ = std::max(end_ns_, rec.t_ns);
      if (rec.tag == fmt::kTagDevice) {  // a device's memory, for a context measured without `before`
        DeviceInfo d;
        if (decode_device_payload(rec.payload, rec.payload_len, &d)) driver_.set_device_total(d.ordinal, d.total_bytes);
      }
      if (rec.is_event() && !opt_.torch_only) driver_.apply(rec);  // contexts, code, graph pools (rule 14, 8)
      if (rec.is_event() && rec.op && rec.result == 0 && vmm(rec)) continue;
      if (rec.is_event()) {
        if (!rec.op || rec.result != 0 || !is_allocation_kind(rec.op->kind)) continue;
        if (rec.op->action == Action::Acquire && rec.size > 0) {
          auto seg = torch_segments_.find(SegmentKey{rec.addr, rec.t_ns});
          bool torch = seg != torch_segments_.end();
          uint64_t stream = torch ? seg->second : 0;
          live_[rec.addr] = DriverAlloc{rec.size, rec.t_ns, rec.device, rec.stack, torch, stream};
          if (torch) {
            free_blocks_.segment_alloc(rec.addr, rec.size, rec.stack);
            action(rec.device, "segment_alloc", rec.addr, rec.size, stream, rec.t_ns, rec.stack, false);
          } else if (!opt_.torch_only) {
            action(rec.device, "segment_alloc", rec.addr, rec.size, 0, rec.t_ns, rec.stack, true);
            action(rec.device, "alloc", rec.addr, rec.size, 0, rec.t_ns, rec.stack, true);
          }
        } else if (rec.op->action == Action::Release) {
          auto it = live_.find(rec.addr);
          if (it == live_.end()) continue;
          const DriverAlloc a = it->second;
          live_.erase(it);
          if (a.torch) {
            free_blocks_.segment_free(rec.addr);
            action(a.device, "segment_free", rec.addr, a.size, a.stream, rec.t_ns, rec.stack, false);
          } else if (!opt_.torch_only) {
            action(a.device, "free_requested", rec.addr, a.size, 0, rec.t_ns, rec.stack, true);
            action(a.device, "free_completed", rec.addr, a.size, 0, rec.t_ns, rec.stack, true);
            action(a.device, "segment_free", rec.addr, a.size, 0, rec.t_ns, rec.stack, true);
          }
        }
      } else if (is_torch_block(rec.tag)) {
        TorchBlock b;
        if (!decode_torch_block(rec, &b)) continue;
        flush_pending(b.device);  // (an expandable segment's pages are mapped before its block)
        if (b.size > 0) {
          free_blocks_.alloc(b.addr, uint64_t(b.size));
          // PyTorch's alloc action gives the request (its block keeps it as requested_size).
          uint64_t requested = b.requested ? b.requested : uint64_t(b.size);
          if (b.requested) stats_.requests_known++;
          blocks_[b.addr] = Block{uint64_t(b.size), b.stack, b.device, requested, b.stream};
          if (containing(live_, b.addr, uint64_t(b.size)) == live_.end() && !in_expandable(b.addr, uint64_t(b.size)))
            stats_.blocks_without_segment++;
          action(b.device, "alloc", b.addr, requested, b.stream, rec.t_ns, b.stack, false);
        } else {
          auto it = blocks_.find(b.addr);  // (a free's size is the block's request, as PyTorch's)
          uint64_t size = it != blocks_.end() ? it->second.requested : uint64_t(-b.size);
          uint64_t stream = it != blocks_.end() ? it->second.stream : 0;
          if (it != blocks_.end()) blocks_.erase(it);
          free_blocks_.free(b.addr, uint64_t(-b.size), size);
          action(b.device, "free_requested", b.addr, size, stream, rec.t_ns, b.stack, false);
          action(b.device, "free_completed", b.addr, size, stream, rec.t_ns, b.stack, false);
        }
      } else if (rec.tag == fmt::kTagTorchOom) {
        TorchOom o;  // (PyTorch's oom entry gives the stream of the request: the thread's current one, not recorded)
        if (!decode_torch_oom(rec, &o)) continue;
        action(o.device, "oom", 0, uint64_t(o.size), 0, rec.t_ns, o.stack, false, o.device_free, true);
      }
    }
    build_views();
    // PyTorch records a `snapshot` action where a snapshot is taken: this one, of the end of the
    // trace, with the active bytes of its segments (PyTorch's total_active), no address, no stream.
    std::map<int, uint64_t> active;
    for (const SegmentView& v : views_) active[v.device] += v.active;
    for (const auto& [dev, bytes] : active) list(dev);
    for (auto& [dev, l] : lists_) {
      flush_pending(dev);
      write_action(dev, "snapshot", 0, active[dev], 0, end_ns_, 0, false, 0, false);
    }
    if (!tmp_ok_) {
      *error = "cannot create a temporary file for the actions in " + temporary_dir() + " (TMPDIR chooses another folder)";
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
  // PyTorch's expandable segments: a VMM reservation it maps into and unmaps from (its segment_map
  // and segment_unmap actions); a mapping into anyone else's reservation is memory outside
  // PyTorch, as a cuMemAlloc would be. True when the record was one of these.
  bool vmm(const Record& rec) {
    if (rec.op->kind == MemKind::VmmReservation) {
      if (rec.op->action == Action::Acquire && rec.size > 0) {
        auto t = torch_reservations_.find(SegmentKey{rec.addr, rec.t_ns});
        Reservation& res = reservations_[rec.addr];
        res = Reservation{rec.size, t != torch_reservations_.end(), 0, false, 0, rec.stack, {}};
        if (res.torch) res.device = t->second.device, res.small = t->second.small, res.stream = t->second.stream;
        if (res.torch) free_blocks_.reservation(rec.addr, rec.size);
      } else if (rec.op->action == Action::Release) {
        reservations_.erase(rec.addr);
        free_blocks_.reservation_free(rec.addr);
      }
      return true;
    }
    if (rec.op->kind != MemKind::VmmMapping || rec.size == 0) return false;
    Reservation* res = reservation_of(rec.addr, rec.size);
    if (!res || !res->torch) return false;  // outside PyTorch: exported as an allocation
    if (rec.op->action == Action::Acquire) {
      res->mapped[rec.addr] = rec.size;
      action(res->device, "segment_map", rec.addr, rec.size, res->stream, rec.t_ns, rec.stack, false);
    } else if (rec.op->action == Action::Release) {
      res->mapped.erase(rec.addr);
      action(res->device, "segment_unmap", rec.addr, rec.size, res->stream, rec.t_ns, rec.stack, false);
    }
    return true;
  }

  struct Reservation {
    uint64_t size = 0;
    bool torch = false;
    int device = 0;
    bool small = false;  // PyTorch's small pool (blocks of 1 MiB or less)
    uint64_t stream = 0;  // PyTorch's expandable segments are per stream too
    uint32_t stack = 0;
    std::map<uint64_t, uint64_t> mapped;  // start -> bytes
  };

  Reservation* reservation_of(uint64_t addr, uint64_t size) {
    auto it = reservations_.upper_bound(addr);
    if (it == reservations_.begin()) return nullptr;
    --it;
    return addr + size <= it->first + it->second.size ? &it->second : nullptr;
  }

  bool in_expandable(uint64_t addr, uint64_t size) {
    Reservation* res = reservation_of(addr, size);
    return res && res->torch;
  }

  struct Pending {
    bool on = false;
    const char* what = "";
    uint64_t addr = 0, size = 0, stream = 0, t_ns = 0;
    uint32_t stack = 0;
  };
  struct List {
    Pending pending;  // a segment_map / segment_unmap that the next page may extend
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

  // PyTorch maps (or unmaps) the pages one request needs in one segment_map (segment_unmap); the
  // driver sees one cuMemMap per page: adjacent ones in a row are one action.
  void action(int device, const char* what, uint64_t addr, uint64_t size, uint64_t stream, uint64_t t_ns, uint32_t stack,
              bool outside, uint64_t device_free = 0, bool oom = false) {
    device = device_slot(device);
    if (device >= kMaxDevices) {
      ++left_out_actions_;
      return;
    }
    List& l = list(device);
    const bool vmm = !strcmp(what, "segment_map") || !strcmp(what, "segment_unmap");
    Pending& p = l.pending;
    if (vmm && p.on && !strcmp(p.what, what) && p.stream == stream && (p.addr + p.size == addr || addr + size == p.addr)) {
      p.addr = std::min(p.addr, addr);
      p.size += size;
      return;
    }
    flush_pending(device);
    if (vmm) {
      p = Pending{true, what, addr, size, stream, t_ns, stack};
      return;
    }
    write_action(device, what, addr, size, stream, t_ns, stack, outside, device_free, oom);
  }

  void flush_pending(int device) {
    Pending& p = list(device).pending;
    if (!p.on) return;
    p.on = false;
    if (!strcmp(p.what, "segment_map")) free_blocks_.map(p.addr, p.size, p.stack);
    else free_blocks_.unmap(p.addr, p.size);
    write_action(device, p.what, p.addr, p.size, p.stream, p.t_ns, p.stack, false, 0, false);
  }

  void write_action(int device, const char* what, uint64_t addr, uint64_t size, uint64_t stream, uint64_t t_ns,
                    uint32_t stack, bool outside, uint64_t device_free, bool oom) {
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
    w.unsigned_integer(stream);
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

  static void driver_frames(PickleWriter& w, const char* what) {
    w.begin_list();
    frame(w, std::string("<outside PyTorch: ") + what + ">", 0, "the CUDA driver");
    w.end();
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

  // A segment as the snapshot shows it: a cudaMalloc'd one, an expandable one (its mapped ranges),
  // or memory outside PyTorch (one block).
  struct Piece {  // a live block, or the free piece between two
    uint64_t addr = 0, size = 0;
    uint32_t stack = 0;
    bool allocated = false;
    uint64_t requested = 0;
  };
  struct SegmentView {
    int device = 0;
    uint64_t address = 0, total = 0, stream = 0;
    bool outside = false, expandable = false, small = false;
    const char* driver = nullptr;  // the driver's own memory (driver_segments): what it is
    uint32_t stack = 0;
    std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (start, bytes) that hold its blocks
    std::vector<Piece> pieces;
    uint64_t active = 0, requested = 0;  // the bytes of its live blocks, and what they were asked for
  };

  // The segments at the end of the trace, with their blocks (views_).
  void build_views() {
    std::vector<SegmentView>& views = views_;
    for (const auto& [addr, a] : live_) {
      if (!a.torch && opt_.torch_only) continue;
      SegmentView v;
      v.device = a.device, v.address = addr, v.total = a.size, v.outside = !a.torch, v.stream = a.stream;
      v.stack = a.torch ? free_blocks_.segment_stack(addr) : a.stack;
      v.small = a.size <= kSmallSegment;
      v.ranges = {{addr, a.size}};
      views.push_back(std::move(v));
    }
    for (const auto& [addr, res] : reservations_) {
      if (!res.torch || res.mapped.empty()) continue;
      SegmentView v;
      v.device = res.device, v.address = res.mapped.begin()->first, v.expandable = true, v.small = res.small;
      v.stack = free_blocks_.segment_stack(v.address), v.stream = res.stream;
      for (const auto& [lo, bytes] : res.mapped) {  // contiguous mappings are one span of blocks
        if (!v.ranges.empty() && v.ranges.back().first + v.ranges.back().second == lo) v.ranges.back().second += bytes;
        else v.ranges.emplace_back(lo, bytes);
        v.total += bytes;
      }
      views.push_back(std::move(v));
    }
    std::sort(views.begin(), views.end(),
              [](const SegmentView& x, const SegmentView& y) { return std::tie(x.device, x.address) < std::tie(y.device, y.address); });
    if (!opt_.torch_only) driver_segments(views);
    for (SegmentView& v : views) v.device = device_slot(v.device);
    auto beyond = std::remove_if(views.begin(), views.end(), [](const SegmentView& v) { return v.device >= kMaxDevices; });
    left_out_segments_ = uint64_t(views.end() - beyond);
    views.erase(beyond, views.end());
    for (SegmentView& v : views) pieces(v);
  }

  void segments(PickleWriter& w) {
    w.begin_list();
    for (const SegmentView& v : views_) segment(w, v);
    w.end();
  }

  // The device memory no allocation holds, that the driver keeps for this process: its contexts,
  // its modules and kernels (measured around their creation: format/accounting.h, rule 14) and
  // the CUDA graph pool (rule 8), one segment each per device at the end of the trace, so that a
  // viewer's total is the process's device memory. They have no address: theirs are made up,
  // below 4 GiB (no GPU allocation of a 64-bit process lives there), one after the other.
  void driver_segments(std::vector<SegmentView>& views) {
    uint64_t at = 1ull << 20;
    for (const DeviceTotals& d : driver_.devices()) {
      if (d.device < 0) continue;
      const std::pair<const char*, int64_t> parts[] = {
          {"CUDA contexts", int64_t(driver_.code_bytes(d.device, CodeCategory::Context))},
          {"CUDA modules and kernels", int64_t(driver_.code_bytes(d.device, CodeCategory::Module))},
          {"CUDA graph pool", int64_t(d.graph_reserved)}};
      for (const auto& [what, bytes] : parts) {
        if (bytes <= 0) continue;
        SegmentView v;
        v.device = d.device, v.address = at, v.total = uint64_t(bytes), v.outside = true, v.driver = what;
        at += (uint64_t(bytes) + (2ull << 20) - 1) & ~((2ull << 20) - 1);
        views.push_back(std::move(v));
      }
    }
  }

  static void pieces(SegmentView& v, const std::map<uint64_t, Block>& blocks, const TorchFreeBlocks& free_blocks) {
    if (v.outside) {
      v.pieces.push_back(Piece{v.address, v.total, v.stack, true, v.total});
      v.active = v.requested = v.total;
      return;
    }
    for (const auto& [lo, bytes] : v.ranges) {  // live blocks and the free pieces between them
      uint64_t at = lo, hi = lo + bytes;
      for (auto it = blocks.lower_bound(lo); it != blocks.end() && it->first < hi; ++it) {
        if (it->first > at) v.pieces.push_back(Piece{at, it->first - at, 0, false, free_blocks.free_requested(at)});
        v.pieces.push_back(Piece{it->first, it->second.size, it->second.stack, true, it->second.requested});
        v.active += it->second.size;
        v.requested += it->second.requested;
        at = it->first + it->second.size;
      }
      if (at < hi) v.pieces.push_back(Piece{at, hi - at, 0, false, free_blocks.free_requested(at)});
    }
  }
  void pieces(SegmentView& v) { pieces(v, blocks_, free_blocks_); }

  void segment(PickleWriter& w, const SegmentView& v) {
    if (v.outside) stats_.outside_segments++;
    w.begin_dict();
    w.string("device");
    w.integer(v.device);
    w.string("address");
    w.unsigned_integer(v.address);
    w.string("total_size");
    w.unsigned_integer(v.total);
    for (const char* k : {"allocated_size", "active_size"}) {
      w.string(k);
      w.unsigned_integer(v.active);
    }
    w.string("requested_size");
    w.unsigned_integer(v.requested);
    w.string("stream");
    w.unsigned_integer(v.stream);
    w.string("segment_type");
    w.string(v.small ? "small" : "large");
    w.string("segment_pool_id");
    w.tuple_begin();
    w.integer(0);
    w.integer(0);
    w.tuple_end(2);
    w.string("is_expandable");
    w.boolean(v.expandable);
    w.string("frames");
    if (v.driver) driver_frames(w, v.driver);
    else frames_inline(w, v.stack, v.outside);
    if (v.outside) {
      w.string("vramtrace_owner");
      w.string(v.driver ? std::string("the CUDA driver: ") + v.driver : owner(v.stack));
    }
    w.string("blocks");
    w.begin_list();
    for (const Piece& p : v.pieces) {
      w.begin_dict();
      w.string("address");
      w.unsigned_integer(p.addr);
      w.string("size");
      w.unsigned_integer(p.size);
      w.string("requested_size");
      w.unsigned_integer(p.requested);
      w.string("state");
      w.string(p.allocated ? "active_allocated" : "inactive");
      w.string("frames");
      if (p.allocated && v.driver) {
        driver_frames(w, v.driver);
      } else if (p.allocated) {
        frames_inline(w, p.stack, v.outside);
      } else {
        w.begin_list();
        w.end();
      }
      w.end();
      stats_.blocks++;
    }
    w.end();
    w.end();
    stats_.segments++;
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
    std::string note = "exported by vramtrace from a trace";
    if (!stats_.block_layer) {
      note += " without PyTorch's block records (no PyTorch, its cudaMallocAsync backend, or the layer off): each "
              "device allocation is a segment with one block";
    } else {
      note += stats_.requests_known ? ": alloc sizes and requested_size are the requests where the trace has them "
                                      "(torch alloc records), else the allocator's rounded block sizes"
                                    : ": alloc sizes and requested_size are the allocator's rounded block sizes (the "
                                      "hook did not see the requests)";
      note += stats_.streams_known ? "; stream is the CUDA stream each block was handed out on (the thread's current one)"
                                   : "; stream is 0 (the hook did not look the streams up: a vramtrace before trace "
                                     "format 1.6, or VRAMTRACE_TORCH_REQUESTS=0)";
    }
    note += "; the last action, `snapshot`, is the end of the trace, where `segments` were taken";
    w.string(note);
    w.string("outside_pytorch");
    w.boolean(!opt_.torch_only);
    w.string("problems");  // the reader's: a trace cut short exports what was written before the cut
    w.begin_list();
    for (const std::string& p : stats_.problems) w.string(p);
    if (left_out_actions_ || left_out_segments_)
      w.string(std::to_string(left_out_actions_) + " actions and " + std::to_string(left_out_segments_) +
               " segments on device ordinals above " + std::to_string(kMaxDevices - 1) +
               " left out (PyTorch's device indexes are 0 to " + std::to_string(kMaxDevices - 1) + ": a damaged trace)");
    w.end();
    w.end();
  }

  static inline const std::vector<Frame> kNone{};
  const TorchSnapshotOptions& opt_;
  TorchSnapshotStats& stats_;
  Symbolizer* sym_ = nullptr;
  std::map<SegmentKey, uint64_t> torch_segments_;  // pass 1's PyTorch segments -> their stream
  struct TorchReservation {
    int device = 0;
    bool small = false;  // PyTorch's small pool
    uint64_t stream = 0;
  };
  std::map<SegmentKey, TorchReservation> torch_reservations_;  // from pass 1
  std::map<uint64_t, Reservation> reservations_;
  LiveState driver_;  // the replay, for the driver's own memory at the end
  TorchConfig config_;
  uint64_t realtime_ = 0, monotonic_ = 0;
  std::map<uint64_t, DriverAlloc> live_;
  std::map<uint64_t, Block> blocks_;
  TorchFreeBlocks free_blocks_;  // PyTorch's free blocks: their requests, the segments' frames
  std::vector<SegmentView> views_;  // the segments at the end (build_views)
  uint64_t end_ns_ = 0;             // the last record's time: the export's snapshot action
  uint64_t left_out_actions_ = 0, left_out_segments_ = 0;  // on ordinals beyond kMaxDevices
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
