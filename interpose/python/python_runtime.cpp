// Owns the one-time, lock-free, GIL-free discovery of the interpreter: dlsym(RTLD_DEFAULT) for
// the exported symbols (works for libpython and for a statically linked python executable, which
// exports them with -Xlinker -export-dynamic), version parsing, refusal of debug / trace-refs /
// free-threaded builds, and structural checks of the layout table against the running
// interpreter (static type objects; on 3.13 _PyRuntime's _Py_DebugOffsets) before the walker is
// trusted. Every read here is of statically initialised data, so it is valid even before
// Py_Initialize (e.g. from a library constructor).
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

#include "python_frames.h"
#include "python_state.h"

namespace vt::py {
namespace detail {
namespace {

Runtime g_rt;
std::atomic<const Runtime*> g_active{nullptr};
std::atomic<int> g_phase{0};  // 0: not started, 1: a thread is probing, 2: done
Status g_status = Status::kUnavailable;  // written before g_phase = 2 (release)
const char* g_why = "not initialised";
std::atomic<const char*> g_disabled_why{nullptr};
char g_why_buf[192];  // for the few formatted refusals; written once, before publication

void* sym(const char* name) { return dlsym(RTLD_DEFAULT, name); }

// Formats a refusal into g_why_buf (one refusal per process, so one buffer suffices).
const char* fmt(const char* f, const char* a, long b = 0) {
  std::snprintf(g_why_buf, sizeof g_why_buf, f, a, b);
  return g_why_buf;
}

// "3.12.1 (main, ...)" -> 12; -1 if not "3.<n>".
int parse_minor(const char* v) {
  if (!v || v[0] != '3' || v[1] != '.' || v[2] < '0' || v[2] > '9') return -1;
  int m = 0;
  for (const char* p = v + 2; *p >= '0' && *p <= '9' && m < 1000; ++p) m = m * 10 + (*p - '0');
  return m;
}

// A static type object must be an instance of `type` with the expected name and sizes. A
// trace-refs or free-threaded PyObject header shifts ob_type and tp_*, so this also catches them.
const char* check_type(uintptr_t t, uintptr_t type_type, const char* name, long basicsize, long itemsize) {
  if (!ptr_ok(t) || ld<uintptr_t>(t + kObType) != type_type)
    return fmt("type object '%s' is not a type: unexpected PyObject header", name);
  uintptr_t n = ld<uintptr_t>(t + kTpName);
  if (!n || std::strcmp(reinterpret_cast<const char*>(n), name) != 0)
    return fmt("type '%s' has an unexpected tp_name", name);
  if (basicsize >= 0 && ld<int64_t>(t + kTpBasicsize) != basicsize)
    return fmt("sizeof(%s) differs from the layout table (expected %ld)", name, basicsize);
  if (itemsize >= 0 && ld<int64_t>(t + kTpItemsize) != itemsize)
    return fmt("itemsize of %s differs from the layout table (expected %ld)", name, itemsize);
  return nullptr;
}

// Mirror of CPython 3.13's _Py_DebugOffsets (Include/internal/pycore_runtime.h), the first field
// of _PyRuntime. Its own layout is only stable within 3.13.x, so it is used for 3.13 only.
struct DebugOffsets313 {
  char cookie[8];
  uint64_t version, free_threaded;
  uint64_t runtime_state[3], interpreter_state[13];
  struct { uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id, datastack_chunk, status; } ts;
  struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } fr;
  struct { uint64_t size, filename, name, qualname, linetable, firstlineno, argcount, localsplusnames,
           localspluskinds, co_code_adaptive; } co;
  struct { uint64_t size, ob_type; } pyobject;
  uint64_t type_object[4], tuple_object[3], list_object[3], dict_object[3], float_object[2], long_object[3];
  struct { uint64_t size, ob_size, ob_sval; } bytes;
  struct { uint64_t size, state, length, asciiobject_size; } uni;
  uint64_t gc[2];
};
static_assert(offsetof(DebugOffsets313, ts) == 152 && offsetof(DebugOffsets313, fr) == 224 &&
                  offsetof(DebugOffsets313, co) == 272 && offsetof(DebugOffsets313, bytes) == 512 &&
                  offsetof(DebugOffsets313, uni) == 536,
              "mirror of 3.13 _Py_DebugOffsets (positions printed by layout_gen.c)");

const char* check_debug_offsets_313(const Layout& L) {
  const auto* d = static_cast<const DebugOffsets313*>(sym("_PyRuntime"));
  if (!d) return "3.13: _PyRuntime not exported";
  if (std::memcmp(d->cookie, "xdebugpy", 8) != 0) return "3.13: _PyRuntime has no debug-offsets cookie";
  if ((d->version >> 24) != 3 || ((d->version >> 16) & 0xff) != 13)
    return "3.13: debug offsets are for another version";
  if (d->free_threaded) return "free-threaded (no-GIL) build is not supported";
  struct { uint64_t have, want; const char* what; } c[] = {
      {d->ts.interp, L.ts_interp, "thread_state.interp"},
      {d->ts.current_frame, L.ts_frame, "thread_state.current_frame"},
      {d->fr.previous, L.fr_previous, "interpreter_frame.previous"},
      {d->fr.executable, L.fr_code, "interpreter_frame.executable"},
      {d->fr.instr_ptr, L.fr_instr, "interpreter_frame.instr_ptr"},
      {d->fr.owner, L.fr_owner, "interpreter_frame.owner"},
      {d->co.filename, L.co_filename, "code_object.filename"},
      {d->co.qualname, L.co_name, "code_object.qualname"},
      {d->co.linetable, L.co_linetable, "code_object.linetable"},
      {d->co.firstlineno, L.co_firstlineno, "code_object.firstlineno"},
      {d->co.co_code_adaptive, L.co_code_adaptive, "code_object.co_code_adaptive"},
      {d->pyobject.ob_type, kObType, "pyobject.ob_type"},
      {d->bytes.ob_size, L.bytes_size, "bytes_object.ob_size"},
      {d->bytes.ob_sval, L.bytes_sval, "bytes_object.ob_sval"},
      {d->uni.state, L.uni_state, "unicode_object.state"},
      {d->uni.length, L.uni_length, "unicode_object.length"},
      {d->uni.asciiobject_size, L.ascii_size, "unicode_object.asciiobject_size"},
  };
  for (const auto& e : c)
    if (e.have != e.want) return fmt("3.13 debug offset %s differs from the layout table (%ld)", e.what, (long)e.have);
  return nullptr;
}

Status probe(const char** why) {
  auto get_version = reinterpret_cast<const char* (*)()>(sym("Py_GetVersion"));
  if (!get_version) return *why = "no Python interpreter in this process", Status::kUnavailable;
  const char* ver = get_version();
  int minor = parse_minor(ver);
  const Layout* L = layout_for(minor);
  if (!L) return *why = fmt("unsupported Python version %.20s (3.10-3.13 are supported)", ver),
              Status::kUnsupported;
  // Build flavours whose object layouts differ or whose frames other threads may mutate.
  if (std::strstr(ver, "free-threading") || sym("_Py_MergeZeroLocalRefcount"))
    return *why = "free-threaded (no-GIL) build is not supported", Status::kUnsupported;
  if (sym("_Py_NegativeRefcount")) return *why = "debug build (Py_REF_DEBUG) is not supported", Status::kUnsupported;
  if (sym("_Py_ForgetReference") || sym("_Py_PrintReferences"))
    return *why = "trace-refs build (Py_TRACE_REFS) is not supported", Status::kUnsupported;

  uintptr_t type_type = reinterpret_cast<uintptr_t>(sym("PyType_Type"));
  g_rt.code_type = reinterpret_cast<uintptr_t>(sym("PyCode_Type"));
  g_rt.frame_type = reinterpret_cast<uintptr_t>(sym("PyFrame_Type"));
  g_rt.unicode_type = reinterpret_cast<uintptr_t>(sym("PyUnicode_Type"));
  g_rt.bytes_type = reinterpret_cast<uintptr_t>(sym("PyBytes_Type"));
  g_rt.get_tstate = reinterpret_cast<void* (*)()>(sym("PyGILState_GetThisThreadState"));
  g_rt.main_interp = reinterpret_cast<void* (*)()>(sym("PyInterpreterState_Main"));
  if (!type_type || !g_rt.code_type || !g_rt.frame_type || !g_rt.unicode_type || !g_rt.bytes_type ||
      !g_rt.get_tstate || !g_rt.main_interp)
    return *why = "Python found but a required symbol is not exported", Status::kUnsupported;

  const char* bad = check_type(type_type, type_type, "type", -1, -1);
  if (!bad) bad = check_type(g_rt.code_type, type_type, "code", L->code_basicsize, L->code_itemsize);
  if (!bad) bad = check_type(g_rt.frame_type, type_type, "frame", L->frame_basicsize, 8);
  if (!bad) bad = check_type(g_rt.unicode_type, type_type, "str", L->unicode_basicsize, 0);
  if (!bad) bad = check_type(g_rt.bytes_type, type_type, "bytes", L->bytes_sval + 1, 1);
  if (!bad && minor == 13) bad = check_debug_offsets_313(*L);
  if (bad) return *why = bad, Status::kUnsupported;

  g_rt.L = L;
  g_rt.minor = minor;
  // If this thread already has a thread state, its interp field must be the main interpreter.
  uintptr_t ts = reinterpret_cast<uintptr_t>(g_rt.get_tstate());
  uintptr_t interp = reinterpret_cast<uintptr_t>(g_rt.main_interp());
  if (ptr_ok(ts) && interp && ld<uintptr_t>(ts + L->ts_interp) != interp)
    return *why = "thread state's interp field does not match the layout table", Status::kUnsupported;
  *why = "ok";
  return Status::kOk;
}

}  // namespace

const Runtime* active() {
  const Runtime* r = g_active.load(std::memory_order_acquire);
  if (r || g_phase.load(std::memory_order_acquire) == 2) return r;
  init(nullptr);
  return g_active.load(std::memory_order_acquire);
}

void disable(const char* why) {
  g_disabled_why.store(why, std::memory_order_relaxed);
  g_active.store(nullptr, std::memory_order_release);
}

}  // namespace detail

Status init(const char** why) {
  using namespace detail;
  int phase = g_phase.load(std::memory_order_acquire);
  if (phase == 0) {
    int expected = 0;
    if (g_phase.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      const char* w = nullptr;
      g_status = probe(&w);
      g_why = w;
      if (g_status == Status::kOk) g_active.store(&g_rt, std::memory_order_release);
      g_phase.store(2, std::memory_order_release);
      phase = 2;
    } else {
      phase = expected;
    }
  }
  if (phase != 2) {  // another thread is probing: never wait for it
    if (why) *why = "Python support is still initialising";
    return Status::kUnavailable;
  }
  if (const char* d = g_disabled_why.load(std::memory_order_relaxed)) {
    if (why) *why = d;
    return Status::kUnsupported;
  }
  if (why) *why = g_why;
  return g_status;
}

bool thread_has_state() {
  const detail::Runtime* rt = detail::active();
  return rt && detail::this_thread_state(rt) != 0;
}

}  // namespace vt::py
