// Every branch of the frame walker on CPU, for every layout row, free-threaded 3.13t-3.15t
// included (no such interpreter here): this executable exports a fake interpreter (ENABLE_EXPORTS,
// so dlsym(RTLD_DEFAULT) finds it) and builds its objects in memory per row: type objects,
// compact str objects (ASCII, latin-1, UCS-2, UCS-4), bytes, code objects carrying a REAL line
// table copied from a host interpreter of that minor (fixtures/linetables.txt), thread states
// and frame chains with owners 0-4, tagged 3.14+ executables, the 3.15 base frame, free-threaded
// thread-local bytecode copies (and a bad index), and for 3.13+ the build's own _Py_DebugOffsets
// block as its headers define it (fixtures/debug_offsets_3.N[t].bin, from layout_gen.sh), intact
// and with one field changed at a time. It also fakes the public frame API and Py_AddPendingCall
// so the self-check runs (and can be made to disagree). init() is one-shot, so each case runs
// in a forked child. Memory the walker must never read sits in PROT_NONE pages: reading it
// kills the child, which fails the case.
// Built four times (tests/python/CMakeLists.txt): plain; VT_FAKE_DEBUG_BUILD (exports the
// Py_REF_DEBUG marker); VT_FAKE_TRACE_REFS (Py_TRACE_REFS marker); VT_FAKE_FORGET_REFERENCE
// (3.14+ release builds export _Py_ForgetReference: a trace-refs marker only up to 3.13).
// Usage: synthetic_test FIXTURE_DIR
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "python_frames.h"
#include "fake_python.h"
#include "python_lines.h"

namespace d = vt::py::detail;

#if defined(VT_FAKE_DEBUG_BUILD) || defined(VT_FAKE_TRACE_REFS) || defined(VT_FAKE_FORGET_REFERENCE)
constexpr bool kPlain = false;  // a marker variant: only its init() cases run
#else
constexpr bool kPlain = true;
#endif
using vt::py::RawFrame;
using vt::py::Status;

using namespace fakepy;

namespace {

int g_checks = 0, g_failed_checks = 0;
#define CHECK(cond, ...)                                          \
  do {                                                            \
    ++g_checks;                                                   \
    if (!(cond)) {                                                \
      ++g_failed_checks;                                          \
      std::printf("    check failed (%s:%d): %s: ", __FILE__, __LINE__, #cond); \
      std::printf(__VA_ARGS__);                                   \
      std::printf("\n");                                          \
    }                                                             \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Status listener.
std::vector<std::pair<bool, std::string>> g_reports;
void listener(bool on, const char* why) { g_reports.emplace_back(on, why ? why : ""); }

// One expected frame.
struct Want {
  const Fake::Code* code;
  uint32_t instr;
  bool entry;
};

// capture() must give exactly `want`; describe_code + the offline line decoder must give the
// file, qualified name and the line co_lines() gave for that instruction.
void expect_frames(const char* what, const std::vector<Want>& want, int max = 64) {
  RawFrame raw[64];
  int n = vt::py::capture(raw, max);
  CHECK(n == int(want.size()), "%s: %d frames, expected %zu", what, n, want.size());
  // The recorder's packed keys: the same walk, without the memo, then twice with the process's
  // memo (which has seen every earlier case's frames: same instructions, other executables).
  static vt::py::KeyMemo memo;
  for (vt::py::KeyMemo* m : {static_cast<vt::py::KeyMemo*>(nullptr), &memo, &memo}) {
    uint64_t keys[64];
    int nk = vt::py::capture_keys(keys, max, m);
    CHECK(nk == n, "%s: %d keys, %d frames (memo %p)", what, nk, n, static_cast<void*>(m));
    for (int i = 0; i < n && i < nk; ++i) {
      RawFrame k = vt::py::unpack_key(keys[i]);
      CHECK(vt::py::is_python_key(keys[i]) && k.code == raw[i].code && k.instr == raw[i].instr && k.entry == raw[i].entry,
            "%s: key %d (%#lx) unpacks to %#lx/%#x/%d, the frame is %#lx/%#x/%d", what, i, (unsigned long)keys[i],
            (unsigned long)k.code, k.instr, k.entry, (unsigned long)raw[i].code, raw[i].instr, raw[i].entry);
    }
  }
  for (int i = 0; i < n && i < int(want.size()); ++i) {
    const Want& w = want[size_t(i)];
    CHECK(raw[i].code == w.code->obj, "%s: frame %d: code %#lx, expected %#lx", what, i, (unsigned long)raw[i].code,
          (unsigned long)w.code->obj);
    CHECK(raw[i].instr == w.instr, "%s: frame %d: instr %#x, expected %#x", what, i, raw[i].instr, w.instr);
    CHECK(raw[i].entry == w.entry, "%s: frame %d: entry %d, expected %d", what, i, raw[i].entry, w.entry);
    vt::py::CodeInfo info;
    bool ok = vt::py::describe_code(raw[i].code, &info);
    CHECK(ok, "%s: frame %d: describe_code failed", what, i);
    if (!ok) continue;
    CHECK(info.filename == w.code->file, "%s: frame %d: file '%s', expected '%s'", what, i, info.filename,
          w.code->file.c_str());
    CHECK(info.qualname == w.code->qual, "%s: frame %d: qualname '%s', expected '%s'", what, i, info.qualname,
          w.code->qual.c_str());
    int line = vt::format::python_line(info.py_minor, info.linetable, info.linetable_len, info.firstlineno, raw[i].instr);
    int expect = w.instr == vt::py::kInstrNotStarted ? w.code->lt->firstlineno
                 : w.instr == vt::py::kInstrUnknown  ? -1
                                                     : w.code->lt->lines.at(int(w.instr));
    CHECK(line == expect, "%s: frame %d: line %d, expected %d", what, i, line, expect);
  }
}

// Two instruction offsets with a line each (and different lines), from the fixture.
std::pair<int, int> two_offsets(const LineTable& lt) {
  int a = -1, b = -1;
  for (auto [off, line] : lt.lines) {
    if (off < 2 || line < 0) continue;  // unit 0 is the prologue (incomplete)
    if (a < 0) a = off;
    else if (line != lt.lines.at(a)) {
      b = off;
      break;
    }
  }
  return {a, b};
}

// ---------------------------------------------------------------------------------------------
// The cases.
struct Env {
  const d::Layout& L;
  int minor;
  Fake fake;
  uintptr_t interp;
  Env(const d::Layout& l, int m) : L(l), minor(m), fake(l, m), interp(addr(arena(64))) {}
};

// init() for this row, with the row's own debug block (patched by `tweak`); returns the status.
Status init_row(Env& e, std::vector<uint8_t> block, const char** why, const char* version = nullptr) {
  e.fake.types();
  setup_runtime(e.L, block);
  std::string v = version ? version : version_string(e.L, e.minor);
  g_version = strdup(v.c_str());
  g_interp = reinterpret_cast<void*>(e.interp);
  return vt::py::init(why);
}

// The main chain of a row, walked and self-checked.
void case_walk(const d::Layout& L, int minor) {
  Env e(L, minor);
  const char* why = nullptr;
  std::vector<uint8_t> block = debug_block(L);
  if (minor != L.minor) set_block_version(block, minor);
  vt::py::set_status_listener(listener);
  Status s = init_row(e, block, &why);
  CHECK(s == Status::kOk, "init: %d (%s)", int(s), why);
  if (s != Status::kOk) return;
  Fake& F = e.fake;
  bool newer = minor != L.minor;
  CHECK(newer == (std::strcmp(why, "ok") != 0), "init's why: %s", why);

  auto c_plain = F.code(U"/src/model.py", "/src/model.py", U"Model.forward", "Model.forward");
  auto c_latin = F.code(U"/src/caf\u00e9.py", "/src/café.py", U"M\u00f3dulo.f\u00fcnc", "Módulo.fünc");
  auto c_ucs2 = F.code(U"/src/\u6a21\u578b.py", "/src/模型.py", U"\u51fd\u6570", "函数");
  auto c_ucs4 = F.code(U"/src/emoji.py", "/src/emoji.py", U"f\U0001F600", "f😀");
  auto [o1, o2] = two_offsets(table_for(minor));
  CHECK(o1 > 0 && o2 > 0, "fixture offsets %d %d", o1, o2);
  bool interp_frames = L.kind != d::FrameKind::kFrameObject;
  bool tagged = L.exec_tag_bits != 0;
  uint8_t shim = L.owner_shim;

  // Innermost first: f0 THREAD (tagged with the reference tag on 3.14+), an incomplete frame
  // (skipped), f1 GENERATOR, [shim], f2 FRAME_OBJECT, [3.14: CSTACK 4], f3 generator not started.
  std::vector<uintptr_t> chain;
  std::vector<Want> want;
  std::vector<ApiFrame> api;
  auto add = [&](uintptr_t f, const Fake::Code* c, int off, bool entry) {
    chain.push_back(f);
    if (c) {
      uint32_t instr = off < 0 ? vt::py::kInstrNotStarted : uint32_t(off);
      want.push_back({c, instr, entry});
      int line = off < 0 ? c->lt->firstlineno : c->lt->lines.at(off);
      api.push_back({f, c->obj, off, line});
    }
  };
  add(F.frame(c_plain, o1, 0, tagged ? L.exec_tag_ref : 0), &c_plain, o1, false);
  if (interp_frames) add(F.frame(c_plain, 0, 0), nullptr, 0, false);  // incomplete: unit 0 < firsttraceable
  add(F.frame(c_latin, o2, L.owner_generator), &c_latin, o2, !interp_frames || shim != 255);
  if (shim != 255) add(F.shim(shim), nullptr, 0, false);
  add(F.frame(c_ucs2, o1, 2), &c_ucs2, o1, !interp_frames || L.owner_max > shim);
  if (interp_frames && L.owner_max > shim && shim != 255) add(F.shim(L.owner_max), nullptr, 0, false);  // 3.14 CSTACK
  // A generator before its first instruction (3.11/3.12: prev_instr one unit before the code;
  // 3.13+ start at unit 0, complete for a generator); 3.10: f_lasti -1.
  bool not_started = L.kind != d::FrameKind::kDirectInterp;
  add(F.frame(c_ucs4, not_started ? -1 : 0, L.owner_generator), &c_ucs4, not_started ? -1 : 0, true);
  if (minor == 11) {  // 3.11 marks eval-call entries with is_entry instead of shim frames
    F.set_is_entry(chain[2]);
    want[1].entry = true;
    want[2].entry = false;
  }
  if (!interp_frames)
    for (Want& w : want) w.entry = true;  // 3.10: every frame object has its own eval call
  for (size_t i = 0; i + 1 < chain.size(); ++i) F.link(chain[i], chain[i + 1]);
  uintptr_t base = 0;
  uintptr_t ts = F.tstate(chain[0], e.interp, &base);
  if (base) F.link(chain.back(), base);  // 3.15: the chain ends at the (unreadable) base frame
  t_tstate = reinterpret_cast<void*>(ts);
  g_api = api;

  if (newer) {
    expect_frames("newer minor before its self-check", {});
    CHECK(g_pending != nullptr, "capture() did not schedule the self-check");
  } else {
    expect_frames("main chain", want);
    expect_frames("main chain, max 2", {want[0], want[1]}, 2);
    CHECK(vt::py::thread_has_state(), "thread_has_state");
    CHECK(g_pending != nullptr, "thread_has_state() did not schedule the self-check");
  }
  if (g_pending) {
    g_pending(g_pending_arg);  // the main thread's next bytecode boundary, with the GIL
    CHECK(g_reports.size() == 1 && g_reports[0].first, "self-check reports: %zu, first '%s'", g_reports.size(),
          g_reports.empty() ? "" : g_reports[0].second.c_str());
  }
  if (newer) expect_frames("newer minor after its self-check", want);
  CHECK(vt::py::self_test_with_gil(), "self_test_with_gil");

  // No thread state; a sub-interpreter's thread state; no frames.
  t_tstate = nullptr;
  expect_frames("no thread state", {});
  t_tstate = reinterpret_cast<void*>(F.tstate(chain[0], addr(arena(64))));
  expect_frames("another interpreter's thread state", {});
  t_tstate = reinterpret_cast<void*>(F.tstate(0, e.interp));
  expect_frames("thread state without frames", {});
  CHECK(vt::py::thread_has_state(), "a frameless thread state is a thread state");

  // A cycle ends at the hop cap (never loops, never reports more than max).
  if (interp_frames) {
    uintptr_t a = F.frame(c_plain, o1), b = F.frame(c_latin, o2);
    F.link(a, b), F.link(b, a);
    t_tstate = reinterpret_cast<void*>(F.tstate(a, e.interp));
    RawFrame raw[64];
    int n = vt::py::capture(raw, 64);
    CHECK(n == 64, "cyclic chain: %d frames", n);
  }
}

// The stop conditions and the free-threaded copies (interpreter frames only).
void case_edges(const d::Layout& L) {
  if (L.kind == d::FrameKind::kFrameObject) return;
  Env e(L, L.minor);
  const char* why = nullptr;
  if (init_row(e, debug_block(L), &why) != Status::kOk) {
    CHECK(false, "init: %s", why);
    return;
  }
  Fake& F = e.fake;
  auto c = F.code(U"/a.py", "/a.py", U"a", "a", 3);
  auto [o1, o2] = two_offsets(table_for(L.minor));
  auto run = [&](const char* what, std::vector<uintptr_t> chain, const std::vector<Want>& want) {
    for (size_t i = 0; i + 1 < chain.size(); ++i) F.link(chain[i], chain[i + 1]);
    t_tstate = reinterpret_cast<void*>(F.tstate(chain[0], e.interp));
    expect_frames(what, want);
  };
  // An owner above the highest valid one stops the walk (what follows is never read).
  uintptr_t bad_owner = F.shim(L.owner_max + 1);
  F.link(bad_owner, forbidden());
  run("owner above max", {F.frame(c, o1), bad_owner}, {{&c, uint32_t(o1), true}});
  // An instruction pointer outside the only bytecode (GIL builds, 3.13t): a wrong layout, stop.
  if (!L.fr_tlbc_index) {
    uintptr_t f = F.frame(c, o1);
    put<uintptr_t>(f + L.fr_instr, c.obj + L.co_code_adaptive + 4 * size_t(table_for(L.minor).code_bytes));
    run("instr past the code", {F.frame(c, o2), f}, {{&c, uint32_t(o2), true}});
  }
  // Not a code object: stop.
  uintptr_t not_code = F.frame(c, o1);
  put<uintptr_t>(not_code + L.fr_code, addr(arena(64)));
  run("executable is not a code object", {F.frame(c, o2), not_code}, {{&c, uint32_t(o2), true}});
  // 3.14+: an executable tagged as an int (or invalid) is not followed.
  if (L.exec_tag_bits) {
    uintptr_t f = F.frame(c, o1);
    put<uintptr_t>(f + L.fr_code, forbidden() | 3);
    run("tagged-int executable", {F.frame(c, o2), f}, {{&c, uint32_t(o2), true}});
    uintptr_t g = F.frame(c, o1);
    put<uintptr_t>(g + L.fr_code, c.obj | 2);
    run("invalid tag", {F.frame(c, o2), g}, {{&c, uint32_t(o2), true}});
  }
  // The memo keys frames by instruction pointer: the same one under another executable (a code
  // object freed, another at its place) or owner must not reuse the key (expect_frames walks with
  // the memo twice, after every earlier case).
  {
    uintptr_t f = F.frame(c, o1);
    run("memo: first sight", {f}, {{&c, uint32_t(o1), true}});
    auto c2 = F.code(U"/b.py", "/b.py", U"b", "b");
    put<uintptr_t>(f + L.fr_code, c2.obj);  // same instruction pointer, another code object: outside
    if (L.fr_tlbc_index)                      // its bytecode (free-threaded: kept, line unknown)
      run("memo: same ip, another executable", {f}, {{&c2, vt::py::kInstrUnknown, true}});
    else
      run("memo: same ip, another executable", {f}, {});
    put<uintptr_t>(f + L.fr_code, c.obj);
    put<uintptr_t>(f + L.fr_instr, c.copies[0]);  // unit 0: incomplete for a thread-owned frame
    run("memo: incomplete", {f}, {});
    put<uint8_t>(f + L.fr_owner, L.owner_generator);  // same ip, a generator: complete
    run("memo: same ip, another owner", {f}, {{&c, 0, true}});
  }
  // A generator frame at unit 0 is complete; a thread-owned one is not (skipped).
  run("incomplete frames", {F.frame(c, 0, 0), F.frame(c, o1), F.frame(c, 0, L.owner_generator)},
      {{&c, uint32_t(o1), false}, {&c, 0, true}});
  if (!L.fr_tlbc_index) return;

  // Free-threaded 3.14+: a frame running thread-local copy 2 of 3, and a bad index.
  run("bytecode copy 2", {F.frame(c, o1, 0, 0, 2), F.frame(c, o2, 0, 0, 1)},
      {{&c, uint32_t(o1), false}, {&c, uint32_t(o2), true}});
  uintptr_t f = F.frame(c, o1);
  put<int32_t>(f + L.fr_tlbc_index, 7);  // the array holds 3: entries[7] must not be read
  uintptr_t guarded = addr(before_guard(8 + 8 * 3));
  std::memcpy(reinterpret_cast<void*>(guarded), reinterpret_cast<void*>(ld_ptr(c.obj + L.co_tlbc)), 8 + 8 * 3);
  put<uintptr_t>(c.obj + L.co_tlbc, guarded);
  run("tlbc index past the array", {f}, {{&c, vt::py::kInstrUnknown, true}});
  put<int32_t>(f + L.fr_tlbc_index, -1);
  run("negative tlbc index", {f}, {{&c, vt::py::kInstrUnknown, true}});
  uintptr_t g = F.frame(c, o1, 0, 0, 1);
  put<uintptr_t>(g + L.fr_instr, c.copies[2] + uintptr_t(o1));  // says copy 1, runs in copy 2
  run("instr outside its copy", {g}, {{&c, vt::py::kInstrUnknown, true}});
  put<uintptr_t>(c.obj + L.co_tlbc, 0);
  run("no tlbc array", {F.frame(c, o1, 0, 0, 1)}, {{&c, vt::py::kInstrUnknown, true}});
  run("copy 0 needs no array", {F.frame(c, o1, 0, 0, 0)}, {{&c, uint32_t(o1), true}});
}

// The self-check disagreeing with the walk: the walker turns off, with the reason. `lines`: the
// walk and the API agree on the instruction, but CPython's PyCode_Addr2Line gives another line
// than the copied table does (a line-table format the offline decoder does not know).
void case_selfcheck_mismatch(const d::Layout& L, int minor, bool lines) {
  Env e(L, minor);
  const char* why = nullptr;
  std::vector<uint8_t> block = debug_block(L);
  if (minor != L.minor) set_block_version(block, minor);
  vt::py::set_status_listener(listener);
  if (init_row(e, block, &why) != Status::kOk) {
    CHECK(false, "init: %s", why);
    return;
  }
  auto c = e.fake.code(U"/a.py", "/a.py", U"a", "a");
  auto [o1, o2] = two_offsets(table_for(minor));
  uintptr_t f = e.fake.frame(c, o1);
  t_tstate = reinterpret_cast<void*>(e.fake.tstate(f, e.interp));
  int line = c.lt->lines.at(o1);
  if (lines) {
    g_addr2line[c.obj] = [line](int) { return line + 1; };
    g_api = {{f, c.obj, o1, line + 1}};
  } else {
    // 3.11+: the API's lasti differs; 3.10 (no lasti): its line differs.
    g_api = {{f, c.obj, L.minor >= 11 ? o2 : o1, L.minor >= 11 ? line : line + 1}};
  }
  const char* expect = lines ? "copied line table" : "mismatch";
  vt::py::capture(nullptr, 0);
  CHECK(vt::py::thread_has_state(), "thread_has_state before the check");
  CHECK(g_pending, "no self-check scheduled");
  if (g_pending) g_pending(g_pending_arg);
  CHECK(g_reports.size() == 1 && !g_reports[0].first && g_reports[0].second.find(expect) != std::string::npos,
        "reports: %zu '%s'", g_reports.size(), g_reports.empty() ? "" : g_reports[0].second.c_str());
  expect_frames("after a failed self-check", {});
  Status s = vt::py::init(&why);
  CHECK(s == Status::kUnsupported && std::strstr(why, expect), "init after: %d %s", int(s), why);
}

// init() verdicts: (name, version string, block tweak, expected status, text in why).
struct InitCase {
  std::string name;
  const d::Layout* L;
  int minor;
  std::string version;  // empty: the row's own
  std::function<void(std::vector<uint8_t>&)> tweak;
  Status want;
  std::string why_has;
};

void run_init_case(const InitCase& c) {
  Env e(*c.L, c.minor);
  std::vector<uint8_t> block = debug_block(*c.L);
  if (c.minor != c.L->minor && !block.empty()) set_block_version(block, c.minor);
  if (c.tweak) c.tweak(block);
  const char* why = nullptr;
  Status s = init_row(e, block, &why, c.version.empty() ? nullptr : c.version.c_str());
  CHECK(s == c.want && why && std::strstr(why, c.why_has.c_str()), "status %d, why \"%s\" (want %d, \"%s\")", int(s),
        why ? why : "", int(c.want), c.why_has.c_str());
  // Whatever init() said, a refused interpreter reports nothing.
  if (s != Status::kOk) {
    auto code = e.fake.code(U"/a.py", "/a.py", U"a", "a");
    t_tstate = reinterpret_cast<void*>(e.fake.tstate(e.fake.frame(code, two_offsets(table_for(c.minor)).first), e.interp));
    RawFrame raw[4];
    vt::py::CodeInfo info;
    CHECK(vt::py::capture(raw, 4) == 0 && !vt::py::thread_has_state() && !vt::py::describe_code(code.obj, &info),
          "a refused interpreter reported something");
  }
}

std::vector<InitCase> init_cases() {
  std::vector<InitCase> v;
  auto row = [](int m, bool ft = false) { return d::layout_for(m, ft); };
  [[maybe_unused]] auto put64 = [](size_t off, uint64_t val) {
    return [off, val](std::vector<uint8_t>& b) { std::memcpy(b.data() + off, &val, 8); };
  };
#if defined(VT_FAKE_DEBUG_BUILD)
  v.push_back({"debug build 3.12", row(12), 12, "", {}, Status::kUnsupported, "debug build"});
  v.push_back({"debug build 3.14", row(14), 14, "", {}, Status::kUnsupported, "debug build"});
#elif defined(VT_FAKE_TRACE_REFS)
  v.push_back({"trace-refs 3.12", row(12), 12, "", {}, Status::kUnsupported, "trace-refs"});
  v.push_back({"trace-refs 3.15", row(15), 15, "", {}, Status::kUnsupported, "trace-refs"});
#elif defined(VT_FAKE_FORGET_REFERENCE)
  v.push_back({"_Py_ForgetReference on 3.13", row(13), 13, "", {}, Status::kUnsupported, "trace-refs"});
  v.push_back({"_Py_ForgetReference on 3.14", row(14), 14, "", {}, Status::kOk, "ok"});
  v.push_back({"_Py_ForgetReference on 3.15t", row(15, true), 15, "", {}, Status::kOk, "ok"});
#else
  for (const d::Layout& L : d::kLayouts) v.push_back({"row consistent", &L, L.minor, "", {}, Status::kOk, "ok"});
  v.push_back({"3.9", row(10), 9, "3.9.18 (main)", {}, Status::kUnsupported, "unsupported Python version"});
  v.push_back({"2.7", row(10), 10, "2.7.18 (default)", {}, Status::kUnsupported, "unsupported Python version"});
  v.push_back({"garbage version", row(10), 10, "python", {}, Status::kUnsupported, "unsupported Python version"});
  v.push_back({"3.12 free-threaded string", row(12), 12, "3.12.1 free-threading build (main)", {}, Status::kUnsupported,
               "free-threaded"});
  // Every offset the check compares, changed alone in each 3.13+ build's real block.
  for (const d::DebugLayout& D : d::kDebugLayouts) {
    const d::Layout* L = row(D.minor, D.free_threaded);
    std::pair<uint16_t, const char*> fields[] = {
        {D.ts_interp, "thread_state.interp"}, {D.ts_current_frame, "thread_state.current_frame"},
        {D.ts_base_frame, "thread_state.base_frame"}, {D.fr_previous, "interpreter_frame.previous"},
        {D.fr_executable, "interpreter_frame.executable"}, {D.fr_instr_ptr, "interpreter_frame.instr_ptr"},
        {D.fr_owner, "interpreter_frame.owner"}, {D.fr_tlbc_index, "interpreter_frame.tlbc_index"},
        {D.co_filename, "code_object.filename"}, {D.co_qualname, "code_object.qualname"},
        {D.co_linetable, "code_object.linetable"}, {D.co_firstlineno, "code_object.firstlineno"},
        {D.co_code_adaptive, "code_object.co_code_adaptive"}, {D.co_tlbc, "code_object.co_tlbc"},
        {D.ob_type, "pyobject.ob_type"}, {D.tp_name, "type_object.tp_name"},
        {D.bytes_ob_size, "bytes_object.ob_size"}, {D.bytes_ob_sval, "bytes_object.ob_sval"},
        {D.uni_state, "unicode_object.state"}, {D.uni_length, "unicode_object.length"},
        {D.uni_ascii_size, "unicode_object.asciiobject_size"},
        {D.uni_compact_size, "unicode_object.compactunicodeobject_size"}};
    for (auto [pos, name] : fields) {
      if (!pos) continue;
      std::string nm = std::string("3.") + std::to_string(D.minor) + (D.free_threaded ? "t " : " ") + name;
      v.push_back({nm + " changed", L, D.minor, "",
                   [pos = pos](std::vector<uint8_t>& b) {
                     uint64_t x;
                     std::memcpy(&x, b.data() + pos, 8);
                     x += 8;
                     std::memcpy(b.data() + pos, &x, 8);
                   },
                   Status::kUnsupported, name});
      // The same change in a newer minor (read with this row) turns it away as well.
      if (D.minor == d::kNewestMinor)
        v.push_back({"3.16 read as " + nm + " changed", L, 16, "", v.back().tweak, Status::kUnsupported,
                     "3.16's debug offsets disagree"});
    }
    std::string tag = std::string("3.") + std::to_string(D.minor) + (D.free_threaded ? "t" : "");
    v.push_back({tag + " cookie", L, D.minor, "", [](std::vector<uint8_t>& b) { std::memcpy(b.data(), "nodebug!", 8); },
                 Status::kUnsupported, "cookie"});
    v.push_back({tag + " version of another minor", L, D.minor, "", [](std::vector<uint8_t>& b) { set_block_version(b, 12); },
                 Status::kUnsupported, "another version"});
    v.push_back({tag + " free_threaded flag flipped", L, D.minor, "", put64(d::kDebugFreeThreaded, D.free_threaded ? 0 : 1),
                 Status::kUnsupported, "free_threaded flag"});
    v.push_back({tag + " free_threaded flag 2", L, D.minor, "", put64(d::kDebugFreeThreaded, 2), Status::kUnsupported,
                 "free_threaded flag"});
  }
  v.push_back({"3.16 read as 3.15", row(15), 16, "", {}, Status::kOk, "read as 3.15 once a self-check"});
  v.push_back({"3.16t read as 3.15t", row(15, true), 16, "", {}, Status::kOk, "read as 3.15 once a self-check"});
  v.push_back({"3.99 read as 3.15", row(15), 99, "", {}, Status::kOk, "read as 3.15"});
  v.push_back({"3.16 without a debug block", row(15), 16, "", [](std::vector<uint8_t>& b) { std::fill(b.begin(), b.end(), 0); },
               Status::kUnsupported, "cookie"});
  v.push_back({"3.14 with a 3.13 block", row(14), 14, "", [](std::vector<uint8_t>& b) {
                 std::vector<uint8_t> old = debug_block(*d::layout_for(13));
                 std::fill(b.begin(), b.end(), 0);
                 std::memcpy(b.data(), old.data(), old.size());
                 set_block_version(b, 14);
               }, Status::kUnsupported, "disagree"});
#endif
  return v;
}

// Type-object refusals (need the types patched after init_row's setup: run inline).
void case_type_refusals() {
  struct T {
    const char* name;
    int minor;
    bool ft;
    std::function<void(const d::Layout&)> patch;
    const char* why_has;
  } cases[] = {
      {"code size 3.12", 12, false, [](const d::Layout& L) { put<int64_t>(addr(PyCode_Type) + L.tp_basicsize, 200); },
       "sizeof(code)"},
      {"code size 3.14t", 14, true, [](const d::Layout& L) { put<int64_t>(addr(PyCode_Type) + L.tp_basicsize, 208); },
       "sizeof(code)"},
      {"frame size 3.11", 11, false, [](const d::Layout& L) { put<int64_t>(addr(PyFrame_Type) + L.tp_basicsize, 128); },
       "sizeof(frame)"},
      {"trace-refs header 3.11", 11, false, [](const d::Layout& L) { put<uintptr_t>(addr(PyCode_Type) + L.ob_type, 0); },
       "not a type"},
      {"GIL header on a 3.15t", 15, true,
       [](const d::Layout& L) { put<uintptr_t>(addr(PyCode_Type) + L.ob_type, 0), put<uintptr_t>(addr(PyCode_Type) + 8, addr(PyType_Type)); },
       "not a type"},
      {"str name", 13, false, [](const d::Layout& L) { put<uintptr_t>(addr(PyUnicode_Type) + L.tp_name, addr("unicode")); },
       "tp_name"},
  };
  for (const T& c : cases) {
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      const d::Layout& L = *d::layout_for(c.minor, c.ft);
      Env e(L, c.minor);
      e.fake.types();
      c.patch(L);
      setup_runtime(L, debug_block(L));
      g_version = strdup(version_string(L, c.minor).c_str());
      const char* why = nullptr;
      Status s = vt::py::init(&why);
      CHECK(s == Status::kUnsupported && std::strstr(why, c.why_has), "%s: %d %s", c.name, int(s), why);
      std::printf("%s: %s\n", g_failed_checks ? "FAIL" : "ok", c.name);
      std::fflush(stdout);
      _exit(g_failed_checks ? 1 : 0);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
      std::printf("FAIL: %s (child status %#x)\n", c.name, st);
      ++g_failed_checks;
    }
  }
}

int run_forked(const std::string& name, const std::function<void()>& fn) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    fn();
    std::printf("%s: %s (%d checks)\n", g_failed_checks ? "FAIL" : "ok", name.c_str(), g_checks);
    std::fflush(stdout);
    _exit(g_failed_checks ? 1 : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  if (WIFSIGNALED(st))
    std::printf("FAIL: %s: killed by signal %d (a read of memory the walker must not touch?)\n", name.c_str(),
                WTERMSIG(st));
  else if (WIFEXITED(st) && WEXITSTATUS(st) != 1)
    std::printf("FAIL: %s: exit %d\n", name.c_str(), WEXITSTATUS(st));
  return 1;
}

std::string row_name(const d::Layout& L, int minor) {
  std::string t = L.free_threaded ? "t" : "";
  return "3." + std::to_string(minor) + t + (minor != L.minor ? " (as 3." + std::to_string(L.minor) + t + ")" : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
    return 2;
  }
  g_fixtures = argv[1];
  if (!load_fixtures()) {
    std::printf("FAIL: %s/linetables.txt is missing rows\n", argv[1]);
    return 1;
  }
  int failed = 0, cases = 0;
  for (const d::Layout& L : d::kLayouts) {
    if (!kPlain) break;
    if (L.minor >= d::kFirstDebugOffsetsMinor && debug_block(L).empty()) {
      std::printf("FAIL: no debug-offsets fixture for %s\n", row_name(L, L.minor).c_str());
      ++failed;
      continue;
    }
    std::vector<int> minors = {L.minor};
    if (L.minor == d::kNewestMinor) minors.push_back(16);  // a newer minor read with this row
    for (int m : minors) {
      failed += run_forked("walk " + row_name(L, m), [&] { case_walk(L, m); }), ++cases;
      failed += run_forked("self-check mismatch " + row_name(L, m), [&] { case_selfcheck_mismatch(L, m, false); }), ++cases;
      failed += run_forked("self-check line mismatch " + row_name(L, m), [&] { case_selfcheck_mismatch(L, m, true); }), ++cases;
    }
    failed += run_forked("edges " + row_name(L, L.minor), [&] { case_edges(L); }), ++cases;
  }
  if (kPlain) case_type_refusals();
  failed += g_failed_checks;
  for (const InitCase& c : init_cases()) {
    failed += run_forked("init: " + c.name, [&] { run_init_case(c); });
    ++cases;
  }
  std::printf("%d of %d cases failed\n", failed, cases);
  return failed != 0;
}
