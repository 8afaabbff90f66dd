// Writes the two trace shapes of issue 16 that bench/gen_trace's handful of call sites never
// shows, through the recorder's own writer (the process, device, thread, module, stack and event
// records are the ones a traced program gets; only the stack capture is skipped, because no real
// program has millions of distinct call paths to unwind):
//
//   stacks OUT EVENTS [FRAMES]   every event is a new stack of FRAMES (default 24) frames, like
//                                tensor-level events from many distinct Python lines: six
//                                allocator frames shared by all, then a call tree of fan-out 4
//                                (outer frames change slowly, the innermost varying one every
//                                event). Events are allocations of 1 MiB and their frees (each
//                                free from a new stack too), 64 live at a time.
//   live OUT EVENTS LIVE         LIVE allocations are made first (512 B - 64 KiB, 8 call sites),
//                                then each step frees a pseudo-random live one and allocates a new
//                                one at a fresh address, so LIVE stay live; at the end all are freed.
//   poolsync OUT EVENTS LIVE     rule 15's worst case: LIVE stream-ordered allocations (64 KiB) in
//                                the default pool (release threshold 0), then each step allocates
//                                one at a fresh address, frees it and synchronizes (a pool sync
//                                record: the pool gives the freed block back with LIVE still live).
//
// Frames are addresses inside this program's text, so every frame symbolizes to a real function.
// Stacks go through the recorder's stack index (interpose/stacks/stack_index.cpp), so the trace's bytes
// per event are what a traced program with these stacks would write.
// One thread; the output is deterministic apart from timestamps.
// Prints one line: events, stacks, seconds, bytes per event.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "clock.h"
#include "driver_api.h"
#include "meta_records.h"
#include "module_map.h"
#include "payload.h"
#include "recorder.h"
#include "recorder_internal.h"
#include "stack_index.h"

extern "C" char __executable_start;
extern "C" char etext;

namespace {

CUresult fake_version(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult fake_count(int* n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult fake_get(CUdevice* d, int i) {
  *d = i;
  return CUDA_SUCCESS;
}
CUresult fake_name(char* name, int len, CUdevice) {
  snprintf(name, size_t(len), "Synthetic GPU (gen_shapes)");
  return CUDA_SUCCESS;
}
CUresult fake_total(size_t* bytes, CUdevice) {
  *bytes = size_t(80) << 30;
  return CUDA_SUCCESS;
}
CUresult fake_uuid(CUuuid* u, CUdevice d) {
  for (int i = 0; i < 16; ++i) u->bytes[i] = char(0x50 + i + d);
  return CUDA_SUCCESS;
}

constexpr uint64_t kCtx = 0x55550000ull + 0x1000;
constexpr uint64_t kMiB = 1ull << 20;

uint64_t mix(uint64_t x) {
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  return x ^ (x >> 33);
}

// An address inside this program's text, picked by `h`.
uint64_t text_frame(uint64_t h) {
  uint64_t lo = reinterpret_cast<uint64_t>(&__executable_start), hi = reinterpret_cast<uint64_t>(&etext);
  return lo + 0x40 + h % (hi - lo - 0x80);
}

// The frames as captured are the frames written (no Python frames to translate).
int as_written(const uint64_t* key, int n, uint64_t* out, uint64_t) {
  memcpy(out, key, size_t(n) * sizeof *key);
  return n;
}

// Through the recorder's own stack index: deduplicated, written whole or as a delta of this
// thread's previous stack (interpose/stacks/stack_index.cpp), exactly as a traced program's stacks are.
uint32_t g_max_stack = 0;  // the highest id handed out: the recorder's ids are dense from 1
uint32_t write_stack(const uint64_t* frames, int n, uint64_t t) {
  uint32_t id = vt::intern_stack(frames, n, t, as_written);
  if (id > g_max_stack) g_max_stack = id;
  return id;
}

void emit(vt::HookId op, uint64_t addr, uint64_t size, uint32_t stack, uint64_t stream = 0) {
  vt::Event e;
  e.set_op(op);
  e.set_stream(stream);
  e.t_ns = vt::now_ns();
  e.context = kCtx;
  e.device = 0;
  e.set_addr(addr);
  if (size) e.set_size(size);
  e.stack = stack;
  if (stack) e.fields |= vt::format::kEvStack;
  vt::encode_event(e);
}

// Opens the trace with one real event (process, device, thread records) and records the modules.
void open_trace() {
  vt::Event e;
  e.set_op(vt::HookId::cuMemAlloc_v2);
  e.t_ns = vt::now_ns();
  e.context = kCtx;
  e.device = 0;
  e.set_addr(0x7e0000000000ull);
  e.set_size(kMiB);
  vt::record_with_stack(e, nullptr, 0);
  uint64_t f = text_frame(0);
  vt::ensure_modules(&f, 1, e.t_ns);
  emit(vt::HookId::cuMemFree_v2, 0x7e0000000000ull, 0, 0);
}

uint64_t gen_stacks(uint64_t events, int depth) {
  constexpr int kShared = 6;  // the allocator's frames, the same in every stack
  std::vector<uint64_t> frames(static_cast<size_t>(depth));
  auto new_stack = [&](uint64_t i) {
    for (int k = 0; k < depth; ++k) {
      if (k < kShared) {
        frames[size_t(k)] = text_frame(mix(uint64_t(k) + 1));
      } else {
        int level = k - kShared;  // 0 = the innermost varying frame: changes every event
        uint64_t node = level * 2 < 64 ? i >> (2 * level) : 0;
        frames[size_t(k)] = text_frame(mix(node * 64 + uint64_t(k) + 0x100));
      }
    }
    return write_stack(frames.data(), depth, vt::now_ns());
  };
  uint64_t emitted = 0;
  for (uint64_t i = 0; emitted < events; ++i) {
    uint64_t addr = 0x7f0000000000ull + (i % 64) * 2 * kMiB;
    if (i >= 64) {  // 64 live at a time
      emit(vt::HookId::cuMemFree_v2, addr, 0, new_stack(emitted));
      if (++emitted == events) break;
    }
    emit(vt::HookId::cuMemAlloc_v2, addr, kMiB, new_stack(emitted));
    ++emitted;
  }
  return emitted;
}

uint64_t gen_live(uint64_t events, uint64_t live) {
  constexpr int kSites = 8;
  uint32_t site[kSites];
  for (int s = 0; s < kSites; ++s) {
    uint64_t frames[16];
    for (int k = 0; k < 16; ++k) frames[k] = text_frame(mix(uint64_t(s) * 16 + uint64_t(k) + 7));
    site[s] = write_stack(frames, 16, vt::now_ns());
  }
  if (live > events / 2) live = events / 2;  // room to free each one
  std::vector<uint64_t> addr(live);
  uint64_t next = 0x7f0000000000ull, emitted = 0, rng = 0x9e3779b97f4a7c15ull;
  auto fresh = [&](uint64_t i) {
    uint64_t size = 512ull << (mix(i) % 8);  // 512 B .. 64 KiB
    uint64_t a = next;
    next += (size + 511) & ~511ull;
    emit(vt::HookId::cuMemAlloc_v2, a, size, site[mix(i + 1) % kSites]);
    ++emitted;
    return a;
  };
  for (uint64_t i = 0; i < live; ++i) addr[i] = fresh(i);
  uint64_t pairs = (events - 2 * live) / 2;
  for (uint64_t i = 0; i < pairs; ++i) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    uint64_t slot = rng % live;
    emit(vt::HookId::cuMemFree_v2, addr[slot], 0, 0);
    ++emitted;
    addr[slot] = fresh(live + i);
  }
  for (uint64_t i = 0; i < live; ++i) {
    emit(vt::HookId::cuMemFree_v2, addr[i], 0, 0);
    ++emitted;
  }
  return emitted;
}

uint64_t gen_poolsync(uint64_t events, uint64_t live) {
  constexpr uint64_t kStream = 0x5a5a000ull, kSize = 64 << 10;
  if (live > events / 2) live = events / 2;
  uint64_t next = 0x7f0000000000ull, emitted = 0;
  for (uint64_t i = 0; i < live; ++i, next += kSize, ++emitted)
    emit(vt::HookId::cuMemAllocAsync, next, kSize, 0, kStream);
  for (uint64_t steps = (events - live) / 2; steps; --steps, next += kSize, emitted += 2) {
    emit(vt::HookId::cuMemAllocAsync, next, kSize, 0, kStream);
    emit(vt::HookId::cuMemFreeAsync, next, 0, 0, kStream);
    uint8_t buf[16];  // the synchronize: a record, not an event
    vt::format::PayloadWriter p(buf, sizeof buf);
    vt::format::encode<vt::format::PoolSyncSchema>(p, vt::format::PoolSyncRecord{0});
    vt::write_meta(vt::format::kTagPoolSync, p.data(), p.size(), vt::now_ns());
  }
  return emitted;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if ((mode != "stacks" && mode != "live" && mode != "poolsync") || argc < 4 || argc > 5) {
    fprintf(stderr,
            "usage: %s stacks OUT EVENTS [FRAMES]   (every event a new stack, default 24 frames)\n"
            "       %s live OUT EVENTS LIVE        (LIVE allocations live at once)\n"
            "       %s poolsync OUT EVENTS LIVE    (LIVE live in a threshold-0 pool, a free and a sync per step)\n",
            argv[0], argv[0], argv[0]);
    return 2;
  }
  std::string path = argv[2];
  uint64_t events = strtoull(argv[3], nullptr, 10);
  uint64_t arg = argc > 4 ? strtoull(argv[4], nullptr, 10) : (mode == "stacks" ? 24 : 0);
  if (events < 4 || (mode == "stacks" && (arg < 8 || arg > 256)) || (mode != "stacks" && arg < 1)) {
    fprintf(stderr, "gen_shapes: EVENTS >= 4; FRAMES 8..256; LIVE >= 1\n");
    return 2;
  }
  unlink(path.c_str());
  setenv("VRAMTRACE_OUTPUT", path.c_str(), 1);
  unsetenv("VRAMTRACE_DISABLE");
  unsetenv("VRAMTRACE_SINK");
  vt::DriverApi& api = vt::g_api;
  api.driver_get_version = fake_version;
  api.device_get_count = fake_count;
  api.device_get = fake_get;
  api.device_get_name = fake_name;
  api.device_total_mem = fake_total;
  api.device_get_uuid = fake_uuid;

  auto t0 = std::chrono::steady_clock::now();
  open_trace();
  if (!vt::recording()) {
    fprintf(stderr, "gen_shapes: the recorder did not open %s (see the vramtrace: line above)\n", path.c_str());
    return 1;
  }
  uint64_t emitted = 2 + (mode == "stacks"   ? gen_stacks(events - 2, int(arg))
                          : mode == "live" ? gen_live(events - 2, arg)
                                           : gen_poolsync(events - 2, arg));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  struct stat st;
  uint64_t file_bytes = stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  printf("gen_shapes %s: %llu events, %u stacks in %.2f s; file %.1f MiB (%.1f bytes/event)\n", mode.c_str(),
         static_cast<unsigned long long>(emitted), g_max_stack, secs, file_bytes / 1048576.0,
         double(file_bytes) / double(emitted));
  return 0;  // exit() runs the recorder's clean-close mark
}
