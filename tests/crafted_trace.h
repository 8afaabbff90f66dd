// Writing trace files by hand, byte for byte as format/trace_format.h lays them out, for tests
// and benchmarks that need what no real process writes: hostile strings, module paths that name
// FIFOs, 80 000 modules, sizes of 2^63. Records go into chunks of the chosen size in the order
// they are added, each chunk a fresh delta state (time, address, context), as the recorder
// writes them. Use: CraftedTrace t; t.process({"prog"}, "/bin/prog"); t.module(...);
// t.alloc(...); t.write(path).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "trace_format.h"

namespace crafted {

class CraftedTrace {
 public:
  explicit CraftedTrace(uint32_t chunk_size = 64 * 1024) : chunk_size_(chunk_size) {}

  // Header fields a test may want to change before write().
  vt::format::FileHeader header() const {
    vt::format::FileHeader h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, vt::format::kFileMagic, sizeof h.magic);
    h.version_major = vt::format::kVersionMajor;
    h.version_minor = vt::format::kVersionMinor;
    h.header_size = chunk_size_;
    h.chunk_size = chunk_size_;
    h.pid = pid;
    h.ppid = 1;
    h.start_realtime_ns = 1700000000ull * 1000000000ull;
    h.start_monotonic_ns = kT0;
    h.flags = closed ? vt::format::kHeaderClosedCleanly : 0;
    h.end_monotonic_ns = now_;
    h.chunks_allocated = chunks_.size();
    h.rank = rank;
    h.local_rank = -1;
    snprintf(h.session, sizeof h.session, "%s", session.c_str());
    snprintf(h.hostname, sizeof h.hostname, "%s", hostname.c_str());
    h.pid_namespace = pid_namespace;
    return h;
  }

  uint64_t pid = 4242;
  uint64_t pid_namespace = 0;  // 0: unknown (as older writers)
  int rank = -1;
  bool closed = true;  // clean close: the header flag and an end record at write()
  std::string session = "crafted", hostname = "crafted-host";

  void process(const std::vector<std::string>& argv, const std::string& exe, uint64_t driver = 13000) {
    std::string cmdline;
    for (const std::string& a : argv) cmdline += a + '\0';
    Body b;
    b.varint(driver).str(cmdline).str(exe);
    meta(vt::format::kTagProcess, b);
  }
  void device(uint64_t ordinal, uint64_t total, const std::string& name) {
    Body b;
    b.varint(ordinal).varint(total).str(name).str(std::string(16, '\x01'));
    meta(vt::format::kTagDevice, b);
  }
  void module(uint64_t bias, uint64_t lo, uint64_t hi, const std::string& path, const std::string& build_id = "") {
    Body b;
    b.varint(bias).varint(lo).varint(hi).str(path).str(build_id);
    meta(vt::format::kTagModule, b);
  }
  void stack(uint32_t id, const std::vector<uint64_t>& frames) {
    Body b;
    b.varint(id).varint(frames.size());
    for (uint64_t f : frames) b.varint(f);
    meta(vt::format::kTagStack, b);
  }
  void pycode(uint32_t id, int minor, int first_line, const std::string& file, const std::string& qualname) {
    Body b;
    b.varint(id).varint(uint64_t(minor)).varint(uint64_t(first_line)).str(file).str(qualname).str("");
    meta(vt::format::kTagPyCode, b);
  }
  void thread(uint32_t tid, const std::string& name, bool python = false) {
    Body b;
    b.varint(tid).varint(python ? 1 : 0).str(name);
    meta(vt::format::kTagThread, b);
  }
  // NVML's view at a failure: (pid, bytes, name) per process.
  struct GpuProc {
    uint64_t pid, bytes;
    std::string name;
  };
  void gpu_processes(uint64_t device, const std::vector<GpuProc>& procs) {
    Body b;
    b.varint(device).varint(procs.size());
    for (const GpuProc& p : procs) b.varint(p.pid).varint(p.bytes).str(p.name);
    meta(vt::format::kTagGpuProcesses, b);
  }
  void region(bool begin, const std::string& name) {
    Body b;
    b.varint(begin ? vt::format::kRegionBegin : vt::format::kRegionEnd).str(name);
    meta(vt::format::kTagRegion, b);
  }
  // A PyTorch block (format/pytorch_records.h): size > 0 handed out, < 0 taken back, with the
  // allocator's totals after it.
  void torch_block(uint64_t device, uint64_t addr, int64_t size, uint64_t allocated, uint64_t reserved,
                   uint32_t stack_id = 0) {
    Body b;
    b.varint(device).varint(addr).varint(vt::format::zigzag(size)).varint(allocated).varint(reserved).varint(stack_id);
    meta(vt::format::kTagTorchBlock, b);
  }
  // A block handed out with the size the program asked for (the torch alloc record).
  void torch_alloc(uint64_t device, uint64_t addr, uint64_t size, uint64_t requested, uint64_t allocated,
                   uint64_t reserved, uint32_t stack_id = 0) {
    Body b;
    b.varint(device).varint(addr).varint(size).varint(requested).varint(allocated).varint(reserved).varint(stack_id);
    meta(vt::format::kTagTorchAlloc, b);
  }
  // The same, on a stream other than the default one (the torch stream alloc record).
  void torch_stream_alloc(uint64_t device, uint64_t addr, uint64_t size, uint64_t requested, uint64_t stream,
                          uint64_t allocated, uint64_t reserved, uint32_t stack_id = 0) {
    Body b;
    b.varint(device).varint(addr).varint(size).varint(requested).varint(stream).varint(allocated).varint(reserved)
        .varint(stack_id);
    meta(vt::format::kTagTorchStreamAlloc, b);
  }
  // PyTorch's OutOfMemoryError report: the rounded size it could not place, its totals, and
  // cudaMemGetInfo's free and total.
  void torch_oom(uint64_t device, uint64_t size, uint64_t allocated, uint64_t reserved, uint64_t free_bytes,
                 uint64_t total_bytes, uint32_t stack_id = 0) {
    Body b;
    b.varint(device).varint(vt::format::zigzag(int64_t(size))).varint(allocated).varint(reserved).varint(free_bytes)
        .varint(total_bytes).varint(stack_id);
    meta(vt::format::kTagTorchOom, b);
  }

  // cuMemAlloc_v2 / cuMemFree_v2 on `device` (a context record comes with the first event of
  // each chunk); result != 0 records a failure with free and total bytes.
  void alloc(uint64_t addr, uint64_t size, uint32_t stack_id = 0, int64_t device = 0, int32_t result = 0,
             uint64_t free_bytes = 0, uint64_t total_bytes = 0) {
    event(1, addr, true, size, stack_id, device, result, free_bytes, total_bytes);
  }
  void free(uint64_t addr, int64_t device = 0) { event(3, addr, false, 0, 0, device, 0, 0, 0); }

  size_t chunks() const { return chunks_.size() + (cur_.empty() ? 0 : 1); }

  // The whole file: header slot, then the chunks.
  std::string bytes() {
    if (closed && !ended_) {
      Body b;
      meta(vt::format::kTagEnd, b);
      ended_ = true;
    }
    flush();
    vt::format::FileHeader h = header();
    std::string out(chunk_size_, '\0');
    memcpy(&out[0], &h, sizeof h);
    for (const std::string& c : chunks_) out += c;
    return out;
  }
  void write(const std::string& path) {
    std::string b = bytes();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(b.data(), std::streamsize(b.size()));
  }

 private:
  static constexpr uint64_t kT0 = 1000000000ull;
  struct Body {
    std::string s;
    Body& varint(uint64_t v) {
      uint8_t b[vt::format::kMaxVarint];
      uint8_t* e = vt::format::put_varint(b, v);
      s.append(reinterpret_cast<char*>(b), size_t(e - b));
      return *this;
    }
    Body& str(const std::string& v) {
      varint(v.size());
      s += v;
      return *this;
    }
  };

  void event(uint8_t op, uint64_t addr, bool has_size, uint64_t size, uint32_t stack_id, int64_t device, int32_t result,
             uint64_t free_bytes, uint64_t total_bytes) {
    // Encoded twice at most: when it does not fit, the chunk is closed and the delta state resets.
    for (int attempt = 0; attempt < 2; ++attempt) {
      Body b;
      uint64_t t = tick();
      b.varint(t - last_t_);
      uint8_t flags = vt::format::kEvAddr | (has_size ? vt::format::kEvSize : 0) | (stack_id ? vt::format::kEvStack : 0);
      bool ctx = !ctx_sent_ || device != last_device_;
      if (ctx) flags |= vt::format::kEvContext;
      if (result) flags |= vt::format::kEvFailed;
      b.s += char(flags);
      if (ctx) b.varint(0x5000).varint(uint64_t(device + 1));
      if (result) b.varint(uint32_t(result)).varint(free_bytes).varint(total_bytes);
      b.varint(vt::format::zigzag(int64_t(addr - last_addr_)));
      if (has_size) b.varint(size);
      if (stack_id) b.varint(stack_id);
      if (!fits(op, b)) {
        flush();
        continue;
      }
      append(op, b, t);
      last_addr_ = addr;
      ctx_sent_ = true;
      last_device_ = device;
      return;
    }
  }
  void meta(uint8_t tag, const Body& payload) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      uint64_t t = tick();
      Body b;
      b.varint(t - last_t_);
      b.s += payload.s;
      if (!fits(tag, b)) {
        flush();
        continue;
      }
      append(tag, b, t);
      return;
    }
  }
  uint64_t tick() {
    now_ += 100;
    return now_;
  }
  bool fits(uint8_t, const Body& b) const {
    size_t need = 1 + vt::format::kMaxVarint + b.s.size();
    return sizeof(vt::format::ChunkHeader) + cur_.size() + need <= chunk_size_ || cur_.empty();
  }
  void append(uint8_t tag, const Body& b, uint64_t t) {
    if (cur_.empty()) base_ = last_t_;  // the first record's dt is relative to the chunk's base time
    cur_ += char(tag);
    Body len;
    len.varint(b.s.size());
    cur_ += len.s;
    cur_ += b.s;
    last_t_ = t;
  }
  void flush() {
    if (cur_.empty()) {
      last_t_ = now_;
      return;
    }
    if (sizeof(vt::format::ChunkHeader) + cur_.size() > chunk_size_) abort();  // one record larger than a chunk
    vt::format::ChunkHeader ch{};
    ch.magic = vt::format::kChunkMagic;
    ch.used = uint32_t(cur_.size());
    ch.tid = 100;
    ch.index = uint32_t(chunks_.size());
    ch.base_ns = base_;
    std::string c(chunk_size_, '\0');
    memcpy(&c[0], &ch, sizeof ch);
    memcpy(&c[sizeof ch], cur_.data(), cur_.size());
    chunks_.push_back(std::move(c));
    cur_.clear();
    // A new chunk: fresh delta state, relative to its own base time.
    last_t_ = now_;
    last_addr_ = 0;
    ctx_sent_ = false;
  }

  uint32_t chunk_size_;
  std::vector<std::string> chunks_;
  std::string cur_;
  uint64_t now_ = kT0, last_t_ = kT0, base_ = kT0, last_addr_ = 0;
  bool ctx_sent_ = false, ended_ = false;
  int64_t last_device_ = 0;
};

}  // namespace crafted
