// The Python walker's verdicts through the real libvramtrace.so, in a process whose "CPython" is
// fake (fake_python.h: a 3.14 GIL build with its real _Py_DebugOffsets block, a thread state and
// two frames of /src/train.py): status_e2e.sh checks stderr and the trace (`vramtrace info`,
// `vramtrace dump`). The fake is set up first, then libvramtrace.so is dlopen'ed (its constructor
// finds the interpreter then), and allocations go through its exported cuMemAlloc_v2 to the
// simulated driver this program links. Modes:
//   ok        the table matches; the self-check (Py_AddPendingCall's callback, run here as the
//             main thread's next bytecode boundary would) agrees: frames on both allocations
//   mismatch  the block says interpreter_frame.owner is elsewhere: refused at start-up
//   selfcheck the self-check disagrees after the first allocation: frames on the first only
//   newer     a "3.16" whose debug offsets match 3.15's: read as 3.15, frames only once the
//             self-check has passed (on the second allocation)
// Usage: status_e2e FIXTURE_DIR LIBVRAMTRACE MODE
#include <cuda.h>
#include <dlfcn.h>

#include "fake_python.h"

using namespace fakepy;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s FIXTURE_DIR LIBVRAMTRACE ok|mismatch|selfcheck\n", argv[0]);
    return 2;
  }
  g_fixtures = argv[1];
  std::string mode = argv[3];
  if (!load_fixtures()) return std::fprintf(stderr, "status_e2e: fixtures missing\n"), 2;
  bool newer = mode == "newer";
  int minor = newer ? 16 : 14;
  const d::Layout& L = *d::layout_for(newer ? 15 : 14, false);
  const d::DebugLayout& D = *d::debug_layout_for(L.minor, false);
  Fake F(L, minor);
  F.types();
  std::vector<uint8_t> block = debug_block(L);
  if (block.empty()) return std::fprintf(stderr, "status_e2e: no 3.14 block\n"), 2;
  if (mode == "mismatch") {
    uint64_t owner = L.fr_owner + 9;
    std::memcpy(block.data() + D.fr_owner, &owner, 8);
  }
  if (newer) set_block_version(block, 16);
  setup_runtime(L, block);
  g_version = newer ? "3.16.0 (main, Jan 1 2027, 00:00:00) [GCC]" : "3.14.2 (main, Jan 1 2026, 00:00:00) [GCC]";
  g_interp = reinterpret_cast<void*>(addr(arena(64)));

  // /src/train.py: step() called by main(), both at instructions with a line.
  auto step = F.code(U"/src/train.py", "/src/train.py", U"Trainer.step", "Trainer.step");
  auto outer = F.code(U"/src/train.py", "/src/train.py", U"main", "main");
  int o1 = -1, o2 = -1;
  for (auto [off, line] : step.lt->lines) {
    if (off < 2 || line < 0) continue;
    if (o1 < 0) o1 = off;
    else if (line != step.lt->lines.at(o1)) {
      o2 = off;
      break;
    }
  }
  uintptr_t f0 = F.frame(step, o1, 0, L.exec_tag_ref), f1 = F.frame(outer, o2);
  F.link(f0, f1);
  uintptr_t base = 0;
  t_tstate = reinterpret_cast<void*>(F.tstate(f0, addr(g_interp), &base));
  F.link(f1, base);  // (3.15 layout: the chain ends at the base frame)
  g_api = {{f0, step.obj, o1, step.lt->lines.at(o1)}, {f1, outer.obj, o2, outer.lt->lines.at(o2)}};
  std::printf("expect %s:%d:%s\n", step.file.c_str(), step.lt->lines.at(o1), step.qual.c_str());

  void* vt = dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL);
  if (!vt) return std::fprintf(stderr, "status_e2e: %s\n", dlerror()), 2;
  auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(dlsym(vt, "cuMemAlloc_v2"));
  CUdevice dev;
  CUcontext ctx;
  if (!alloc || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx))
    return std::fprintf(stderr, "status_e2e: driver setup failed\n"), 2;
  CUdeviceptr p;
  if (alloc(&p, 1 << 20)) return 2;  // the first event: the trace opens, the thread is described
  if (mode != "mismatch") {
    if (!g_pending) return std::fprintf(stderr, "status_e2e: no self-check was scheduled\n"), 1;
    if (mode == "selfcheck") g_api[0].lasti += 2;  // CPython's API now disagrees with the walk
    g_pending(g_pending_arg);
  }
  if (alloc(&p, 2 << 20)) return 2;
  return 0;
}
