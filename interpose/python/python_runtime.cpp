// Owns the one-time, lock-free, GIL-free discovery of the interpreter: dlsym(RTLD_DEFAULT) for
// the exported symbols (works for libpython and for a statically linked python executable, which
// exports them with -Xlinker -export-dynamic), version parsing, the build flavour (free-threaded
// from _PyRuntime's debug offsets on 3.13+), refusal of debug and trace-refs builds, and the
// structural checks of the layout table against the running interpreter (static type objects;
// on 3.13+ every offset used against _PyRuntime's _Py_DebugOffsets) before the walker is trusted.
// Also the walker's process-wide on/off state. Every read here is of statically initialised
// data, so it is valid even before Py_Initialize (e.g. from a library constructor).
#include <dlfcn.h>

#include <cstdarg>
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
std::atomic<StatusListener> g_listener{nullptr};
char g_why_buf[256];  // for the one formatted verdict of init(); written once, before publication

void* sym(const char* name) { return dlsym(RTLD_DEFAULT, name); }

// Formats init()'s verdict into g_why_buf (one verdict per process, so one buffer suffices).
__attribute__((format(printf, 1, 2))) const char* fmt(const char* f, ...) {
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(g_why_buf, sizeof g_why_buf, f, ap);
  va_end(ap);
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
// trace-refs PyObject header shifts ob_type and tp_*, so this also catches one.
const char* check_type(const Layout& L, uintptr_t t, uintptr_t type_type, const char* name, long basicsize,
                       long itemsize) {
  if (!ptr_ok(t) || ld<uintptr_t>(t + L.ob_type) != type_type)
    return fmt("type object '%s' is not a type: unexpected PyObject header", name);
  uintptr_t n = ld<uintptr_t>(t + L.tp_name);
  if (!n || std::strcmp(reinterpret_cast<const char*>(n), name) != 0)
    return fmt("type '%s' has an unexpected tp_name", name);
  if (basicsize >= 0 && ld<int64_t>(t + L.tp_basicsize) != basicsize)
    return fmt("sizeof(%s) differs from the layout table (expected %ld)", name, basicsize);
  if (itemsize >= 0 && ld<int64_t>(t + L.tp_itemsize) != itemsize)
    return fmt("itemsize of %s differs from the layout table (expected %ld)", name, itemsize);
  return nullptr;
}

// 3.13+: every offset the walker and describe_code() read, as _PyRuntime's _Py_DebugOffsets
// (block `d`, laid out as D) states it, must equal the table row L. `minor` is the interpreter's.
const char* check_debug_offsets(const uint8_t* d, const Layout& L, const DebugLayout& D, int minor) {
  struct Check {
    uint16_t pos, want;
    const char* what;
  };
  const Check checks[] = {
      {D.ts_interp, L.ts_interp, "thread_state.interp"},
      {D.ts_current_frame, L.ts_frame, "thread_state.current_frame"},
      {D.ts_base_frame, L.ts_base_frame, "thread_state.base_frame"},
      {D.fr_previous, L.fr_previous, "interpreter_frame.previous"},
      {D.fr_executable, L.fr_code, "interpreter_frame.executable"},
      {D.fr_instr_ptr, L.fr_instr, "interpreter_frame.instr_ptr"},
      {D.fr_owner, L.fr_owner, "interpreter_frame.owner"},
      {D.fr_tlbc_index, L.fr_tlbc_index, "interpreter_frame.tlbc_index"},
      {D.co_filename, L.co_filename, "code_object.filename"},
      {D.co_qualname, L.co_name, "code_object.qualname"},
      {D.co_linetable, L.co_linetable, "code_object.linetable"},
      {D.co_firstlineno, L.co_firstlineno, "code_object.firstlineno"},
      {D.co_code_adaptive, L.co_code_adaptive, "code_object.co_code_adaptive"},
      {D.co_tlbc, L.co_tlbc, "code_object.co_tlbc"},
      {D.ob_type, L.ob_type, "pyobject.ob_type"},
      {D.tp_name, L.tp_name, "type_object.tp_name"},
      {D.bytes_ob_size, L.bytes_size, "bytes_object.ob_size"},
      {D.bytes_ob_sval, L.bytes_sval, "bytes_object.ob_sval"},
      {D.uni_state, L.uni_state, "unicode_object.state"},
      {D.uni_length, L.uni_length, "unicode_object.length"},
      {D.uni_ascii_size, L.ascii_size, "unicode_object.asciiobject_size"},
      {D.uni_compact_size, L.compact_size, "unicode_object.compactunicodeobject_size"},
  };
  for (const Check& c : checks) {
    if (c.pos == 0) continue;  // not in this minor's block
    uint64_t have = ld<uint64_t>(reinterpret_cast<uintptr_t>(d) + c.pos);
    if (have != c.want)
      return fmt("CPython 3.%d's debug offsets disagree with the layout table (%s is %llu, the table has %u)",
                 minor, c.what, static_cast<unsigned long long>(have), unsigned(c.want));
  }
  return nullptr;
}

Status probe(const char** why) {
  auto get_version = reinterpret_cast<const char* (*)()>(sym("Py_GetVersion"));
  if (!get_version) return *why = "no Python interpreter in this process", Status::kUnavailable;
  const char* ver = get_version();
  int minor = parse_minor(ver);
  if (minor < 10)
    return *why = fmt("unsupported Python version %.20s (3.10-3.%d are supported)", ver ? ver : "?", kNewestMinor),
           Status::kUnsupported;
  if (sym("_Py_NegativeRefcount")) return *why = "debug build (Py_REF_DEBUG) is not supported", Status::kUnsupported;
  // Py_TRACE_REFS: _Py_PrintReferences exists only there (3.14+ release builds export
  // _Py_ForgetReference, so that one is a marker only up to 3.13).
  if (sym("_Py_PrintReferences") || (minor <= 13 && sym("_Py_ForgetReference")))
    return *why = "trace-refs build (Py_TRACE_REFS) is not supported", Status::kUnsupported;

  // The build flavour. 3.13+ state it in _PyRuntime's debug offsets (cookie, version and
  // free_threaded sit at the same place in every minor's block); the version string and a
  // free-threaded-only symbol must agree with it.
  bool ft_hint = std::strstr(ver, "free-threading") || sym("_Py_MergeZeroLocalRefcount");
  const uint8_t* block = nullptr;
  bool ft = ft_hint;
  if (minor >= kFirstDebugOffsetsMinor) {
    block = static_cast<const uint8_t*>(sym("_PyRuntime"));
    if (!block) return *why = fmt("CPython 3.%d: _PyRuntime is not exported", minor), Status::kUnsupported;
    if (std::memcmp(block, kDebugCookie, sizeof kDebugCookie) != 0)
      return *why = fmt("CPython 3.%d: _PyRuntime has no debug-offsets cookie", minor), Status::kUnsupported;
    uint64_t v = ld<uint64_t>(reinterpret_cast<uintptr_t>(block) + kDebugVersion);
    if ((v >> 24) != 3 || int((v >> 16) & 0xff) != minor)
      return *why = fmt("CPython 3.%d: the debug offsets are for another version (0x%llx)", minor,
                        static_cast<unsigned long long>(v)),
             Status::kUnsupported;
    uint64_t flag = ld<uint64_t>(reinterpret_cast<uintptr_t>(block) + kDebugFreeThreaded);
    if (flag > 1 || (flag == 1) != ft_hint)
      return *why = fmt("CPython 3.%d: the debug offsets' free_threaded flag (%llu) disagrees with the build",
                        minor, static_cast<unsigned long long>(flag)),
             Status::kUnsupported;
    ft = flag == 1;
  } else if (ft_hint) {
    return *why = fmt("a free-threaded CPython 3.%d is not a known build", minor), Status::kUnsupported;
  }

  // The row: this minor's, or for a newer minor the newest one, if its debug offsets agree.
  const Layout* L = layout_for(minor, ft);
  bool newer = false;
  if (!L && minor > kNewestMinor) {
    L = layout_for(kNewestMinor, ft);
    newer = true;
  }
  if (!L)
    return *why = fmt("unsupported Python version %.20s (3.10-3.%d are supported)", ver, kNewestMinor),
           Status::kUnsupported;

  uintptr_t type_type = reinterpret_cast<uintptr_t>(sym("PyType_Type"));
  g_rt.code_type = reinterpret_cast<uintptr_t>(sym("PyCode_Type"));
  g_rt.frame_type = reinterpret_cast<uintptr_t>(sym("PyFrame_Type"));
  g_rt.unicode_type = reinterpret_cast<uintptr_t>(sym("PyUnicode_Type"));
  g_rt.bytes_type = reinterpret_cast<uintptr_t>(sym("PyBytes_Type"));
  g_rt.get_tstate = reinterpret_cast<void* (*)()>(sym("PyGILState_GetThisThreadState"));
  g_rt.main_interp = reinterpret_cast<void* (*)()>(sym("PyInterpreterState_Main"));
  g_rt.add_pending = reinterpret_cast<int (*)(int (*)(void*), void*)>(sym("Py_AddPendingCall"));
  if (!type_type || !g_rt.code_type || !g_rt.frame_type || !g_rt.unicode_type || !g_rt.bytes_type ||
      !g_rt.get_tstate || !g_rt.main_interp)
    return *why = "Python found but a required symbol is not exported", Status::kUnsupported;
  if (newer && !g_rt.add_pending)
    return *why = fmt("CPython 3.%d is newer than this build knows and cannot be self-checked", minor),
           Status::kUnsupported;

  const char* bad = check_type(*L, type_type, type_type, "type", -1, -1);
  if (!bad) bad = check_type(*L, g_rt.code_type, type_type, "code", L->code_basicsize, L->code_itemsize);
  // PyFrame_Type's size pins the 3.10-3.12 frame layouts; 3.13+ have debug offsets instead (and
  // patch releases may grow the frame object without moving anything the walker reads).
  if (!bad) bad = check_type(*L, g_rt.frame_type, type_type, "frame", minor <= 12 ? L->frame_basicsize : -1, -1);
  if (!bad) bad = check_type(*L, g_rt.unicode_type, type_type, "str", L->unicode_basicsize, 0);
  if (!bad) bad = check_type(*L, g_rt.bytes_type, type_type, "bytes", L->bytes_sval + 1, 1);
  if (!bad && block) bad = check_debug_offsets(block, *L, *debug_layout_for(L->minor, ft), minor);
  if (bad) return *why = bad, Status::kUnsupported;

  g_rt.L = L;
  g_rt.walk = walker_for(L);
  g_rt.walk_keys = key_walker_for(L);
  g_rt.minor = minor;
  g_rt.newer = newer;
  // If this thread already has a thread state, its interp field must be the main interpreter.
  uintptr_t ts = reinterpret_cast<uintptr_t>(g_rt.get_tstate());
  uintptr_t interp = reinterpret_cast<uintptr_t>(g_rt.main_interp());
  if (ptr_ok(ts) && interp && ld<uintptr_t>(ts + L->ts_interp) != interp)
    return *why = "thread state's interp field does not match the layout table", Status::kUnsupported;
  if (newer)
    *why = fmt("CPython 3.%d%s is newer than this build knows; its debug offsets match 3.%d's for every field "
               "read, so it is read as 3.%d once a self-check on the main thread passes",
               minor, ft ? " (free-threaded)" : "", L->minor, L->minor);
  else
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

const Runtime* accepted() {
  if (g_phase.load(std::memory_order_acquire) != 2) init(nullptr);
  if (g_phase.load(std::memory_order_acquire) != 2 || g_status != Status::kOk) return nullptr;
  return g_disabled_why.load(std::memory_order_acquire) ? nullptr : &g_rt;
}

void disable(const char* why) {
  g_disabled_why.store(why, std::memory_order_release);
  g_active.store(nullptr, std::memory_order_release);
}

void enable_after_check() {
  if (!g_disabled_why.load(std::memory_order_acquire)) g_active.store(&g_rt, std::memory_order_release);
}

void report_status(bool on, const char* why) {
  if (StatusListener fn = g_listener.load(std::memory_order_acquire)) fn(on, why);
}

}  // namespace detail

void set_status_listener(StatusListener fn) { detail::g_listener.store(fn, std::memory_order_release); }

Status init(const char** why) {
  using namespace detail;
  int phase = g_phase.load(std::memory_order_acquire);
  if (phase == 0) {
    int expected = 0;
    if (g_phase.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      const char* w = nullptr;
      g_status = probe(&w);
      g_why = w;
      // A newer minor stays unpublished until its self-check passes (python_selftest.cpp).
      if (g_status == Status::kOk && !g_rt.newer) g_active.store(&g_rt, std::memory_order_release);
      if (g_status == Status::kOk && g_rt.newer) g_check_wanted.store(true, std::memory_order_relaxed);
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
  if (const char* d = g_disabled_why.load(std::memory_order_acquire)) {
    if (why) *why = d;
    return Status::kUnsupported;
  }
  if (why) *why = g_why;
  return g_status;
}

}  // namespace vt::py
