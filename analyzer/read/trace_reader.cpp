// See trace_reader.h. Decoding mirrors interpose/record/recorder.cpp; the format is format/trace_format.h,
// payloads are read with format/payload.h.
#include "trace_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "file_header.h"
#include "meta_records.h"
#include "payload.h"
#include "regular_file.h"

namespace vt::analyzer {

namespace fmt = vt::format;

struct TraceReader::Cursor {
  const uint8_t* p = nullptr;
  const uint8_t* end = nullptr;
  uint32_t index = 0;
  uint64_t base_ns = 0;
  uint64_t last_ns = 0;
  uint64_t last_addr = 0;
  uint64_t ctx = 0;
  int32_t dev = -1;
  uint64_t stream = 0;
  const uint8_t* chunk_lo = nullptr;  // the whole chunk, for release()
  const uint8_t* chunk_hi = nullptr;
  bool cut = false;  // the file ends inside this chunk (already reported): a torn last record is expected
  bool dirty = false;  // rec holds a field only rare records set (advance clears them first)
  Record rec;
};

namespace {

using Bytes = fmt::PayloadReader;

std::string hex(fmt::Text b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

std::string fixed_str(const char* s, size_t cap) { return std::string(s, strnlen(s, cap)); }

}  // namespace

bool decode_process_payload(const uint8_t* p, size_t n, ProcessInfo* out) {
  fmt::ProcessRecord rec;
  if (!fmt::decode<fmt::ProcessSchema>(p, n, &rec)) return false;
  out->driver_version = int(rec.driver_version);
  out->exe = std::string(rec.exe);
  out->argv = split_argv(rec.argv);
  return true;
}

bool resolve_stack_deltas(StackStore* store) {
  if (store->pending_deltas.empty()) return true;
  std::vector<std::string> todo;
  todo.swap(store->pending_deltas);
  // Linear in the pending records however long their chains: each is decoded once its base is
  // known, starting from those whose base is known now.
  std::unordered_multimap<uint32_t, size_t> waiting;  // base id -> pending record
  std::vector<size_t> ready;
  for (size_t i = 0; i < todo.size(); ++i) {
    fmt::StackDeltaRecord d;
    fmt::PayloadReader b(reinterpret_cast<const uint8_t*>(todo[i].data()), todo[i].size());
    if (!fmt::decode<fmt::StackDeltaSchema>(b, &d) || d.base_back == 0 || d.base_back > d.id) continue;
    uint32_t base = d.id - d.base_back;
    if (store->stacks.contains(base))
      ready.push_back(i);
    else
      waiting.emplace(base, i);
  }
  size_t decoded = 0;
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    Record r;
    r.tag = fmt::kTagStackDelta;
    r.payload = reinterpret_cast<const uint8_t*>(todo[i].data());
    r.payload_len = todo[i].size();
    fmt::StackDeltaRecord d;
    fmt::decode<fmt::StackDeltaSchema>(r.payload, r.payload_len, &d);
    if (!decode_stack_meta(r, store) || !store->stacks.contains(d.id)) continue;
    ++decoded;
    auto range = waiting.equal_range(d.id);
    for (auto it = range.first; it != range.second; ++it) ready.push_back(it->second);
    waiting.erase(range.first, range.second);
  }
  store->pending_deltas.clear();
  return decoded == todo.size();
}

std::vector<std::string> split_argv(std::string_view cmdline) {
  std::vector<std::string> argv;
  size_t start = 0;
  for (size_t i = 0; i <= cmdline.size(); ++i) {
    if (i == cmdline.size() || cmdline[i] == '\0') {
      if (i > start || i < cmdline.size()) argv.emplace_back(cmdline.substr(start, i - start));
      start = i + 1;
    }
  }
  return argv;
}

bool decode_stack_meta(const Record& r, StackStore* store) {
  Bytes b(r.payload, r.payload_len);
  switch (r.tag) {
    case fmt::kTagStack: {
      fmt::StackRecord s;
      if (!fmt::decode<fmt::StackSchema>(b, &s) || s.frames > fmt::kMaxStackRecordFrames) return false;
      // Straight into the arena; kept only when every row was read.
      uint64_t* frames = store->stacks.begin_add(s.id, uint32_t(s.frames));
      if (!frames) return true;  // known already: the first record of an id wins
      // Each row is one varint (StackFrameSchema), read with varint_wide: addresses are 6-7 bytes.
      static_assert(sizeof(fmt::StackFrameRow) == sizeof(uint64_t), "a frame row is one varint: read it as one");
      for (uint32_t i = 0; i < s.frames; ++i) frames[i] = b.varint_wide();
      if (!b.ok()) return false;
      store->stacks.commit();
      return true;
    }
    case fmt::kTagStackDelta: {
      fmt::StackDeltaRecord d;
      if (!fmt::decode<fmt::StackDeltaSchema>(b, &d) || d.base_back == 0 || d.base_back > d.id) return false;
      StackFrames::Frames base;
      if (!store->stacks.find(d.id - d.base_back, &base)) {
        // The base is another record of the same thread and comes first in time; in a file
        // read out of order (or a damaged one) it may come later: kept until the end.
        if (store->pending_deltas.size() >= kMaxPendingDeltas) return false;
        store->pending_deltas.emplace_back(reinterpret_cast<const char*>(r.payload), r.payload_len);
        return true;
      }
      uint64_t n = uint64_t(d.inner) + d.fresh + d.outer;
      if (uint64_t(d.inner) + d.outer > base.n || n > fmt::kMaxStackRecordFrames) return false;
      if (store->stacks.contains(d.id)) return true;  // known already: the first record of an id wins
      // Rebuilt whole (the references need the frames before them), then kept as the change
      // (StackFrames::add_delta). `base` may live in the store's scratch: nothing touches the
      // store until it has been read.
      std::vector<uint64_t>& frames = store->rebuilt;
      frames.resize(size_t(n));
      for (uint32_t i = 0; i < d.inner; ++i) frames[i] = base[i];
      for (uint32_t i = d.inner; i < d.inner + d.fresh; ++i)
        frames[i] = fmt::stack_delta_reference(base.data, base.n, d.outer, frames.data(), i) + uint64_t(b.zigzag());
      for (uint32_t k = 0; k < d.outer; ++k) frames[n - d.outer + k] = base[base.n - d.outer + k];
      if (!b.ok()) return false;
      store->stacks.add_delta(d.id, d.id - d.base_back, d.inner, d.outer, frames.data(), uint32_t(n));
      return true;
    }
    case fmt::kTagModule: {
      fmt::ModuleRecord rec;
      if (!fmt::decode<fmt::ModuleSchema>(b, &rec)) return false;
      ModuleInfo m;
      m.bias = rec.bias;
      m.lo = rec.lo;
      m.hi = rec.hi;
      m.path = std::string(rec.path);
      m.build_id = hex(rec.build_id);
      m.t_ns = r.t_ns;
      std::string key(reinterpret_cast<const char*>(&m.lo), sizeof m.lo);
      key.append(reinterpret_cast<const char*>(&m.hi), sizeof m.hi);
      key += m.path;
      if (!store->module_keys.insert(std::move(key)).second) return true;  // known already
      store->modules.push_back(std::move(m));
      return true;
    }
    case fmt::kTagPyCode: {
      fmt::PyCodeRecord rec;
      if (!fmt::decode<fmt::PyCodeSchema>(b, &rec)) return false;
      PyCodeInfo c;
      c.py_minor = int(rec.py_minor);
      c.first_line = int(rec.first_line);
      c.file = std::string(rec.file);
      c.qualname = std::string(rec.qualname);
      c.linetable = std::string(rec.linetable);
      store->code.emplace(rec.id, std::move(c));
      return true;
    }
    case fmt::kTagThread: {
      fmt::ThreadRecord rec;
      if (!fmt::decode<fmt::ThreadSchema>(b, &rec)) return false;
      ThreadInfo& t = store->threads[rec.tid];
      t.name = std::string(rec.name);
      t.python = t.python || (rec.flags & fmt::kThreadHasPython);
      return true;
    }
    case fmt::kTagConfig: {
      fmt::ConfigRecord rec;
      bool ok = fmt::decode<fmt::ConfigSchema>(b, &rec);
      store->stack_depth = int(rec.stack_depth);  // what was read, even from a damaged record
      store->python_status = int(rec.python_status);
      store->python_message = std::string(rec.python_message);
      return ok;
    }
  }
  return true;
}

bool decode_region(const Record& r, RegionMark* out) {
  fmt::RegionRecord rec;
  bool ok = fmt::decode<fmt::RegionSchema>(r.payload, r.payload_len, &rec);
  out->name = std::string(rec.name);
  if (!ok || (rec.kind != fmt::kRegionBegin && rec.kind != fmt::kRegionEnd)) return false;
  out->begin = rec.kind == fmt::kRegionBegin;
  return true;
}

bool decode_note(const Record& r, std::string* text) {
  fmt::NoteRecord rec;
  if (!fmt::decode<fmt::NoteSchema>(r.payload, r.payload_len, &rec)) return false;
  *text = std::string(rec.text);
  return true;
}

bool decode_gpu_processes(const Record& r, GpuProcessList* out) {
  Bytes b(r.payload, r.payload_len);
  fmt::GpuProcessesRecord head;
  if (!fmt::decode<fmt::GpuProcessesSchema>(b, &head)) return false;
  out->device = int(head.device);
  out->processes.clear();
  for (uint64_t i = 0; i < head.count && i < kMaxGpuProcesses; ++i) {
    fmt::GpuProcessRow row;
    if (!fmt::decode<fmt::GpuProcessSchema>(b, &row)) return false;
    GpuProcess g;
    g.pid = row.pid;
    g.bytes = row.bytes;
    g.name = std::string(row.name);
    out->processes.push_back(std::move(g));
  }
  return true;
}

bool decode_pool_usage(const Record& r, PoolUsageList* out) {
  Bytes b(r.payload, r.payload_len);
  fmt::PoolUsageRecord head;
  if (!fmt::decode<fmt::PoolUsageSchema>(b, &head)) return false;
  out->device = int(head.device);
  out->pools.clear();
  for (uint64_t i = 0; i < head.count && i < fmt::kMaxPoolUsageRows; ++i) {
    fmt::PoolUsageRow row;
    if (!fmt::decode<fmt::PoolUsageRowSchema>(b, &row)) return false;
    out->pools.push_back({row.pool, row.location, row.reserved, row.used});
  }
  return true;
}

bool decode_pool_sync(const Record& r, int* device) {
  fmt::PoolSyncRecord rec;
  if (!fmt::decode<fmt::PoolSyncSchema>(r.payload, r.payload_len, &rec) || rec.device > uint64_t(INT32_MAX)) return false;
  *device = int(rec.device);
  return true;
}

bool decode_device_payload(const uint8_t* p, size_t n, DeviceInfo* out) {
  fmt::DeviceRecord rec;
  bool ok = fmt::decode<fmt::DeviceSchema>(p, n, &rec);
  out->ordinal = int(rec.ordinal);
  out->total_bytes = rec.total_bytes;
  out->name = std::string(rec.name);
  out->uuid = rec.uuid.find_first_not_of('\0') == fmt::Text::npos ? std::string() : hex(rec.uuid);
  return ok;
}

std::unique_ptr<TraceReader> TraceReader::open(const std::string& path, std::string* error) {
  std::unique_ptr<TraceReader> r(new TraceReader());
  r->path_ = path;
  if (!r->load(error)) return nullptr;
  return r;
}

TraceReader::~TraceReader() {
  if (base_) munmap(const_cast<uint8_t*>(base_), size_);
  if (fd_ >= 0) ::close(fd_);
}

void TraceReader::note(std::string msg, bool lost) {
  if (quiet_) return;
  if (!noted_.insert(msg).second) return;  // each sentence once
  if (lost) damage_.push_back(msg);
  problems_.push_back(std::move(msg));
}

// advance()'s damage notes, out of line: their strings kept registers and stack of the record path.
__attribute__((noinline, cold)) void TraceReader::note_in_chunk(uint32_t chunk, const char* before, const char* after) {
  note(before + std::to_string(chunk) + after, true);
}

void TraceReader::finish() {
  if (finished_) return;
  finished_ = true;
  flush_released();
  if (!resolve_stack_deltas(&store_)) note("a stack delta record's base stack is missing or damaged", true);
  if (process_.closed_cleanly && !end_seen_) {
    process_.closed_cleanly = false;
    // When the recorder stopped early, that is the reason (already noted) the end is missing.
    if (!process_.tracing_failed)
      note("the header says the process exited cleanly but the end record is missing: the trace was cut short", true);
  }
}

// Opens the file (a regular file only: never a FIFO or a device) and checks its header: false,
// with the reason in *error, for anything that is not a trace this version reads.
bool TraceReader::open_checked(fmt::FileHeader* header, std::string* error) {
  // Never blocks: a FIFO or a device given as a trace is refused, not waited on.
  struct stat st;
  std::string why;
  fd_ = open_regular_file(path_, &why, kFollow, &st);
  if (fd_ < 0) {
    *error = path_ + ": " + why;
    return false;
  }
  fmt::FileHeader& h = *header;
  fmt::HeaderStatus status = fmt::read_header(fd_, &h, &size_);
  std::string bytes = std::to_string(size_) + " bytes";
  switch (status) {
    case fmt::HeaderStatus::kValid: break;
    case fmt::HeaderStatus::kUnreadable: *error = path_ + ": cannot read: " + strerror(errno); return false;
    case fmt::HeaderStatus::kEmpty: *error = path_ + ": empty file, not a vramtrace trace"; return false;
    case fmt::HeaderStatus::kNotATrace:
      *error = path_ + (size_ < sizeof h ? ": too short to be a vramtrace trace (" + bytes + ")"
                                         : std::string(": not a vramtrace trace (bad magic)"));
      return false;
    case fmt::HeaderStatus::kCutInHeader:
      *error = path_ + ": the trace was cut inside its header (" + bytes + "): nothing to read";
      return false;
    case fmt::HeaderStatus::kOtherMajor:
      *error = path_ + ": trace format " + std::to_string(h.version_major) + "." + std::to_string(h.version_minor) +
               " is not readable by this vramtrace (format " + std::to_string(fmt::kVersionMajor) + "." +
               std::to_string(fmt::kVersionMinor) + ")";
      return false;
    case fmt::HeaderStatus::kCorrupt:
      *error = path_ + ": corrupt header (" +
               (h.chunk_size < 256 || h.chunk_size > fmt::kMaxGeometry
                    ? "chunk size " + std::to_string(h.chunk_size)
                    : "header size " + std::to_string(h.header_size)) +
               ")";  // (the field out of range)
      return false;
  }
  return true;
}

// Maps the whole file read-only; its pages come and go as chunks are read (release()).
bool TraceReader::map_file(const fmt::FileHeader& h, std::string* error) {
  void* m = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (m == MAP_FAILED) {
    *error = path_ + ": cannot map: " + strerror(errno);
    return false;
  }
  base_ = static_cast<const uint8_t*>(m);
  if (h.version_minor > fmt::kVersionMinor)
    note("written by a newer vramtrace (format 1." + std::to_string(h.version_minor) +
             "); records this version does not know were skipped",
         false);

  return true;
}

// The process as the header tells it, and the notes its flags call for.
void TraceReader::read_header_process(const fmt::FileHeader& h) {
  ProcessInfo& pi = process_;
  pi.version_major = h.version_major;
  pi.version_minor = h.version_minor;
  pi.pid = h.pid;
  pi.ppid = h.ppid;
  pi.start_realtime_ns = h.start_realtime_ns;
  pi.start_monotonic_ns = h.start_monotonic_ns;
  pi.end_monotonic_ns = h.end_monotonic_ns;
  pi.closed_cleanly = h.flags & fmt::kHeaderClosedCleanly;
  pi.quick_exit = (h.flags & fmt::kHeaderQuickExit) != 0;
  pi.exit_status = pi.quick_exit ? int(h.exit_status) : 0;
  pi.tracing_failed = h.flags & fmt::kHeaderTracingFailed;
  pi.rank = h.rank;
  pi.local_rank = h.local_rank;
  pi.session = fixed_str(h.session, sizeof h.session);
  pi.hostname = fixed_str(h.hostname, sizeof h.hostname);
  if (!pi.closed_cleanly)
    note("the trace ended without a clean close (the process was killed, crashed, called _exit or exec, "
         "or is still running); every record written before that is shown",
         false);
  if (pi.tracing_failed)
    note("the recorder stopped writing early (disk full, size limit, or the program closed the trace file)", true);
  pi.events_lost = h.events_lost;
  if (pi.events_lost)
    note(std::to_string(pi.events_lost) + " memory events could not be recorded (signal handlers that allocated "
         "while vramtrace was busy on their thread, or events after the recorder stopped writing): figures may be "
         "short by them", true);

}

// A cursor for every claimed chunk with records, after checking the file's shape against the
// header (cut short, a cut chunk, corrupt chunks); false when not even the header slot is there.
bool TraceReader::find_chunks(const fmt::FileHeader& h) {
  ProcessInfo& pi = process_;
  // The file's shape: a trace cut short (a copy that stopped, a full disk on the way) must not
  // read as complete. The header fills its slot; the chunks the header counts must all be there.
  if (size_ < h.header_size) {
    pi.closed_cleanly = false;
    note("the trace was cut inside its header (" + std::to_string(size_) + " of " + std::to_string(h.header_size) +
             " bytes): no records could be read",
         true);
    return false;
  }
  // Chunks sit at fixed offsets; unclaimed ones are all zero. A chunk cut by the end of the file
  // keeps the records before the cut.
  uint64_t body = size_ - h.header_size;
  uint64_t nchunks = body / h.chunk_size;
  uint64_t tail = body % h.chunk_size;  // bytes of a last, cut chunk
  uint64_t present = nchunks + (tail >= sizeof(fmt::ChunkHeader) ? 1 : 0);
  if (h.chunks_allocated > present) {
    pi.closed_cleanly = false;
    note("the trace was cut short: the header counts " + std::to_string(h.chunks_allocated) + " chunks, the file holds " +
             std::to_string(present) + "; the records of the missing ones are lost",
         true);
  }
  if (tail && tail < sizeof(fmt::ChunkHeader)) {
    const uint8_t* c = base_ + h.header_size + nchunks * h.chunk_size;
    bool zero = std::all_of(c, c + tail, [](uint8_t b) { return b == 0; });
    note("the file ends inside the header of chunk " + std::to_string(nchunks) + " (it was cut short)" +
             (zero ? std::string() : "; that chunk is lost"),
         !zero);
  }
  uint32_t payload_cap = h.chunk_size - uint32_t(sizeof(fmt::ChunkHeader));
  for (uint64_t i = 0; i < present; ++i) {
    const uint8_t* c = base_ + h.header_size + i * h.chunk_size;
    uint64_t avail = i < nchunks ? h.chunk_size : tail;  // bytes of this chunk in the file
    fmt::ChunkHeader ch;
    memcpy(&ch, c, sizeof ch);
    // Reading the header mapped the chunk (the kernel maps cached neighbours on a fault): drop
    // it until it is read, or the whole file would be resident at once.
    if (i != 0) release(c, c + avail);
    if (ch.magic == 0) {
      if (avail < h.chunk_size) note("the file ends inside chunk " + std::to_string(i) + " (it was cut short)", false);
      // An unclaimed chunk: the next one with data may lie beyond a hole (a valid header over a
      // sparse terabyte took minutes of page faults on zeros). Ask the file where its data is.
      const off_t after = off_t(h.header_size + (i + 1) * h.chunk_size);
      const off_t data = after < off_t(size_) ? lseek(fd_, after, SEEK_DATA) : after;
      if (data < 0 && errno == ENXIO) break;  // nothing but holes to the end: all unclaimed
      if (data > after) i = (uint64_t(data) - h.header_size) / h.chunk_size - 1;  // (the loop's ++i)
      continue;
    }
    if (ch.magic != fmt::kChunkMagic || ch.used > payload_cap) {
      note("chunk " + std::to_string(i) + " is corrupt and was skipped", true);
      continue;
    }
    uint64_t used = ch.used;
    if (sizeof ch + used > avail) {
      used = avail - sizeof ch;
      pi.closed_cleanly = false;
      note("the file ends inside chunk " + std::to_string(i) + " (it was cut short): the records before the cut were kept, "
               "the rest of that chunk is lost",
           true);
    } else if (avail < h.chunk_size) {
      note("the file ends inside chunk " + std::to_string(i) + " (it was cut short) after its last record", false);
    }
    if (used == 0) continue;
    record_bytes_ += sizeof ch + used;
    Cursor cur;
    cur.p = c + sizeof ch;
    cur.end = cur.p + used;
    cur.index = uint32_t(i);
    cur.base_ns = ch.base_ns;
    cur.last_ns = ch.base_ns;
    cur.chunk_lo = c;
    cur.chunk_hi = c + avail;
    cur.cut = used < ch.used;
    cur.rec.tid = ch.tid;  // (every record of a chunk is its thread's: set once)
    cursors_.push_back(cur);
  }
  flush_released();

  return true;
}

// The first chunk's process and device records, ahead of the stream (the analysis needs the
// devices from the first event on).
void TraceReader::read_first_chunk_meta() {
  // Process and device records are written first, into the first chunk claimed (index 0).
  // Damage found here is reported once, when the stream reaches it.
  for (const Cursor& c0 : cursors_) {
    if (c0.index != 0) continue;
    Cursor scan = c0;
    quiet_ = true;
    while (advance(scan))
      if (!scan.rec.is_event()) apply_meta(scan.rec);
    quiet_ = false;
  }

}

// The chunks in the order the stream takes them up: by base time.
void TraceReader::order_chunks() {
  pending_.resize(cursors_.size());
  for (uint32_t i = 0; i < cursors_.size(); ++i) pending_[i] = i;
  // Latest base first, so the earliest pending chunk is at the back.
  std::sort(pending_.begin(), pending_.end(), [this](uint32_t a, uint32_t b) {
    return cursors_[a].base_ns != cursors_[b].base_ns ? cursors_[a].base_ns > cursors_[b].base_ns : a > b;
  });
  next_pending_ns_ = pending_.empty() ? ~0ull : cursors_[pending_.back()].base_ns;
}

bool TraceReader::load(std::string* error) {
  fmt::FileHeader h;
  if (!open_checked(&h, error) || !map_file(h, error)) return false;
  read_header_process(h);
  if (!find_chunks(h)) return true;  // (said: a header cut short has nothing more to read)
  read_first_chunk_meta();
  order_chunks();
  return true;
}

void TraceReader::apply_meta(const Record& r) {
  if (r.tag == fmt::kTagEnd) {
    end_seen_ = true;
    return;
  }
  if (is_stack_meta(r.tag)) {
    if (stacks_loaded_) return;  // load_stacks() decoded it already
    if (!decode_stack_meta(r, &store_)) note("a stack, module or code record is damaged", true);
    return;
  }
  if (r.tag == fmt::kTagProcess) {
    if (!decode_process_payload(r.payload, r.payload_len, &process_)) note("the process record is damaged", true);
  } else if (r.tag == fmt::kTagDevice) {
    DeviceInfo d;
    if (!decode_device_payload(r.payload, r.payload_len, &d)) {
      note("a device record is damaged", true);
      return;
    }
    for (const DeviceInfo& known : process_.devices)
      if (known.ordinal == d.ordinal) return;
    process_.devices.push_back(std::move(d));
    std::sort(process_.devices.begin(), process_.devices.end(),
              [](const DeviceInfo& a, const DeviceInfo& b) { return a.ordinal < b.ordinal; });
  }
}

static_assert(sizeof(Record) == 136, "TraceReader::advance sets or resets every field of Record one by one (the dirty reset, the metadata and the event paths): add the new one");

// advance and emit run once per record: always inlined into next() (~28 instructions per record
// of call overhead in callgrind).
__attribute__((always_inline)) inline bool TraceReader::advance(Cursor& c) {
  // A loop, not recursion: a chunk can hold thousands of damaged records in a row.
  for (;;) {
    if (c.p >= c.end) return false;
    Record& r = c.rec;
    const uint8_t* p = c.p;
    uint8_t tag = *p++;
    uint64_t len = 0;
    if (p < c.end && *p < 0x80) len = *p++;  // (an event's length: one byte)
    else if (!(p = fmt::get_varint(p, c.end, &len))) p = c.end, len = 0;  // (damaged, below)
    // (len - 1 wraps when len is 0: one test for "empty" and "past the chunk's end")
    if (tag == 0 || len - 1 >= uint64_t(c.end - p)) {
      if (!c.cut) note_in_chunk(c.index, "chunk ", " is damaged; the rest of it was skipped");
      c.p = c.end;
      return false;
    }
    const uint8_t* end = p + len;
    c.p = end;
    // Every field an event of an address, a size and a stack does not set is zero already, and
    // its context and device are the chunk's last ones, unless the record before changed them
    // (c.dirty). Field by field, not `r = Record{}`: that compiles to a `rep stos`, a fifth of
    // this function. (tid is the chunk's, set once.)
    if (__builtin_expect(c.dirty, 0)) {
      c.dirty = false;
      r.result = 0;
      r.aux = r.aux2 = r.free_bytes = r.total_bytes = 0;
      r.payload = nullptr;
      r.payload_len = 0;
      r.context = c.ctx;  // (a metadata record cleared them)
      r.device = c.dev;
    }
    r.tag = tag;
    Bytes b(p, size_t(end - p), c.chunk_hi);  // (the rest of the chunk may be loaded, never decoded)
    uint64_t dt = b.varint();
    c.last_ns += dt;
    r.t_ns = c.last_ns;
    if (tag >= 0x80) {
      c.dirty = true;
      r.op = nullptr;
      r.fields = 0;
      r.context = 0;
      r.device = -1;
      r.stream = r.addr = r.size = 0;
      r.stack = 0;
      r.payload = b.pos();
      r.payload_len = size_t(end - b.pos());
      if (b.ok()) return true;
      note_in_chunk(c.index, "a damaged record in chunk ", " was skipped");
      continue;
    }
    r.op = op_by_code(tag);
    uint8_t flags = b.byte();
    // In the order of format/trace_format.h. Most events (an allocation, a free) have only an
    // address, a size and a stack: the other fields are decoded apart, out of line, so that the
    // flags no longer spill (~10 instructions per event less, issue 43).
    const bool rare = __builtin_expect((flags & ~(fmt::kEvAddr | fmt::kEvSize | fmt::kEvStack)) != 0, 0);
    if (rare) decode_leading(c, flags, b);
    r.addr = 0;
    if (flags & fmt::kEvAddr) {
      c.last_addr += uint64_t(fmt::unzigzag(b.varint()));
      r.addr = c.last_addr;
    }
    r.size = flags & fmt::kEvSize ? b.varint() : 0;
    if (rare) decode_aux(r, flags, b);
    r.stack = flags & fmt::kEvStack ? uint32_t(b.varint()) : 0;
    r.fields = flags & (fmt::kEvFailed | fmt::kEvAddr | fmt::kEvSize | fmt::kEvAux | fmt::kEvAux2 | fmt::kEvStack);
    r.stream = r.op && r.op->kind == MemKind::Async ? c.stream : 0;
    if (!b.ok()) {
      note_in_chunk(c.index, "a damaged event in chunk ", " was skipped");
      continue;
    }
    return true;
  }
}

// An event's context, stream and failure fields (advance's rare ones before the address).
__attribute__((noinline)) void TraceReader::decode_leading(Cursor& c, uint8_t flags, format::PayloadReader& b) {
  c.dirty = true;  // (the result and the aux fields: the next record clears them)
  if (flags & fmt::kEvContext) {
    c.ctx = b.varint();
    uint64_t dev1 = b.varint();  // ordinal + 1; 0 = unknown
    c.dev = dev1 == 0 || dev1 > uint64_t(INT32_MAX) ? -1 : int32_t(dev1 - 1);
    c.rec.context = c.ctx;  // (kept in the record for the events that follow)
    c.rec.device = c.dev;
  }
  if (flags & fmt::kEvStream) c.stream = b.varint();
  if (flags & fmt::kEvFailed) {
    c.rec.result = int32_t(uint32_t(b.varint()));
    c.rec.free_bytes = b.varint();
    c.rec.total_bytes = b.varint();
  }
}

// Its aux fields (after the size, before the stack).
__attribute__((noinline)) void TraceReader::decode_aux(Record& r, uint8_t flags, format::PayloadReader& b) {
  if (flags & fmt::kEvAux) r.aux = b.varint();
  if (flags & fmt::kEvAux2) r.aux2 = b.varint();
}

void TraceReader::load_stacks() {
  if (stacks_loaded_) return;
  stacks_loaded_ = true;
  for (const Cursor& c0 : cursors_) {
    // Only tags, lengths and times are read; events are skipped whole.
    const uint8_t* p = c0.p;
    uint64_t t = c0.last_ns;
    while (p < c0.end) {
      uint8_t tag = *p;
      uint64_t len = 0;
      const uint8_t* body = fmt::get_varint(p + 1, c0.end, &len);
      if (tag == 0 || !body || len == 0 || len > uint64_t(c0.end - body)) break;  // reported when streamed
      uint64_t dt = 0;
      const uint8_t* after_dt = fmt::get_varint(body, body + len, &dt);
      if (after_dt) t += dt;  // as advance() does: a damaged dt adds nothing
      if (tag == fmt::kTagEnd) end_seen_ = true;
      if (is_stack_meta(tag)) {
        Record r;
        r.tag = tag;
        r.t_ns = t;  // modules: the symbolizer picks the latest record covering an address
        if (after_dt) {
          r.payload = after_dt;
          r.payload_len = size_t(body + len - after_dt);
          if (!decode_stack_meta(r, &store_)) note("a stack, module or code record is damaged", true);
        }
      }
      p = body + len;
    }
    release(c0.chunk_lo, c0.chunk_hi);
  }
  if (!resolve_stack_deltas(&store_)) note("a stack delta record's base stack is missing or damaged", true);
  finish();  // every record's tag was seen
}

void TraceReader::release(const uint8_t* chunk_lo, const uint8_t* chunk_hi) {
  // A read chunk's pages leave this process (the page cache keeps them): resident memory stays
  // bounded by the chunks in flight, not the file size. Reading them again just faults them in.
  // Adjacent chunks are dropped together, up to 4 MiB at a time: one madvise per 64 KiB chunk
  // was ~3,300 calls for a 16-rank job, and with two workers each one interrupts the other core
  // (a TLB shootdown in the same address space).
  if (chunk_lo == released_hi_ && released_hi_) {
    released_hi_ = chunk_hi;
  } else {
    flush_released();
    released_lo_ = chunk_lo;
    released_hi_ = chunk_hi;
  }
  if (released_hi_ - released_lo_ >= (4 << 20)) flush_released();
}

void TraceReader::flush_released() {
  if (!released_hi_) return;
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  uintptr_t lo = (uintptr_t(released_lo_) + page - 1) & ~(page - 1);
  uintptr_t hi = uintptr_t(released_hi_) & ~(page - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  released_lo_ = released_hi_ = nullptr;
}

const Record* TraceReader::next() {
  // Heap entries carry their cursor's next time, so ordering never touches the cursors.
  auto later = [](const HeapEntry& x, const HeapEntry& y) { return x.t != y.t ? x.t > y.t : x.index > y.index; };
  // The cursor that produced the last record usually produces the next one too: it stays out of
  // the heap while it is still the earliest (no push/pop per record), which one compare with
  // limit_ns_ tells (the heap's test and the pending chunks' were ~10 instructions per record).
  if (Cursor* cur = current_) {
    if (__builtin_expect(advance(*cur), 1)) {
      const uint64_t t = cur->rec.t_ns;
      if (__builtin_expect(t < limit_ns_, 1)) return emit(*cur);
      // t >= limit_ns_, the smaller of the heap's earliest time and the next pending chunk's.
      const HeapEntry e{t, cur->index, cur};
      if (!heap_.empty() && heap_.front().t < next_pending_ns_) {
        // No pending chunk comes before the heap's earliest, and t is at or after it.
        if (t == heap_.front().t && e.index < heap_.front().index) return emit(*cur);  // a tie it wins
        // The heap's earliest goes next: it leaves and this cursor takes its place, one sift
        // down (a push and a pop were ~40 instructions per record where threads' records
        // interleave).
        return take(*replace_earliest(e, later));
      }
      heap_.push_back(e);
      std::push_heap(heap_.begin(), heap_.end(), later);
    } else {
      release(cur->chunk_lo, cur->chunk_hi);
    }
    current_ = nullptr;
  }
  // Activate every chunk that may hold a record no later than the current earliest.
  while (!pending_.empty() && (heap_.empty() || cursors_[pending_.back()].base_ns <= heap_.front().t)) {
    uint32_t i = pending_.back();
    pending_.pop_back();
    next_pending_ns_ = pending_.empty() ? ~0ull : cursors_[pending_.back()].base_ns;
    if (advance(cursors_[i])) {
      heap_.push_back(HeapEntry{cursors_[i].rec.t_ns, cursors_[i].index, &cursors_[i]});
      std::push_heap(heap_.begin(), heap_.end(), later);
    } else {
      release(cursors_[i].chunk_lo, cursors_[i].chunk_hi);
    }
  }
  if (heap_.empty()) {
    finish();
    return nullptr;
  }
  std::pop_heap(heap_.begin(), heap_.end(), later);
  Cursor* c = heap_.back().cursor;
  heap_.pop_back();
  return take(*c);  // advanced on the next call
}

// `c` becomes the current cursor: its record is the earliest, and the next one is too while it
// comes before limit_ns_.
__attribute__((always_inline)) inline const Record* TraceReader::take(Cursor& c) {
  current_ = &c;
  limit_ns_ = std::min<uint64_t>(heap_.empty() ? ~0ull : heap_.front().t, next_pending_ns_);
  return emit(c);
}

template <typename Later>
__attribute__((always_inline)) inline TraceReader::Cursor* TraceReader::replace_earliest(const HeapEntry& e, Later later) {
  Cursor* const out = heap_[0].cursor;
  const size_t n = heap_.size();
  size_t i = 0;
  for (;;) {
    size_t m = 2 * i + 1;
    if (m >= n) break;
    if (m + 1 < n && later(heap_[m], heap_[m + 1])) ++m;
    if (!later(e, heap_[m])) break;
    heap_[i] = heap_[m];
    i = m;
  }
  heap_[i] = e;
  return out;
}

__attribute__((always_inline)) inline const Record* TraceReader::emit(Cursor& c) {
  if (__builtin_expect(!c.rec.is_event(), 0)) apply_meta(c.rec);
  return &c.rec;
}

}  // namespace vt::analyzer
