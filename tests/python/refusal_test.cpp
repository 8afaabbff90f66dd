// init()'s acceptance and refusal paths, which the real interpreters here cannot reach (unknown
// versions, free-threaded, debug and trace-refs builds, layouts that disagree with the table or
// with 3.13's _Py_DebugOffsets). This executable exports a fake interpreter (ENABLE_EXPORTS, so
// dlsym(RTLD_DEFAULT) finds it) and runs each case in a forked child, since init() is one-shot.
// Built twice: with VT_FAKE_DEBUG_BUILD it also exports _Py_NegativeRefcount (a Py_REF_DEBUG
// marker) and runs only the debug-build case.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "python_frames.h"
#include "python_layouts.h"

using vt::py::Status;
namespace d = vt::py::detail;

extern "C" {
alignas(16) unsigned char PyType_Type[512], PyCode_Type[512], PyFrame_Type[512], PyUnicode_Type[512],
    PyBytes_Type[512];
alignas(16) unsigned char _PyRuntime[1024];  // only its leading _Py_DebugOffsets is read (3.13)
const char* g_version = "";
const char* Py_GetVersion() { return g_version; }
void* PyGILState_GetThisThreadState() { return nullptr; }  // no thread has a thread state
void* PyInterpreterState_Main() { return nullptr; }
#ifdef VT_FAKE_DEBUG_BUILD
void _Py_NegativeRefcount() {}
#endif
}

namespace {

void put64(unsigned char* base, size_t off, uint64_t v) { std::memcpy(base + off, &v, 8); }

void fake_type(unsigned char* t, const char* name, int64_t basicsize, int64_t itemsize) {
  put64(t, d::kObType, reinterpret_cast<uint64_t>(PyType_Type));
  put64(t, d::kTpName, reinterpret_cast<uint64_t>(name));
  put64(t, d::kTpBasicsize, static_cast<uint64_t>(basicsize));
  put64(t, d::kTpItemsize, static_cast<uint64_t>(itemsize));
}

// Type objects (and on 3.13 the debug offsets) exactly as the table expects for 3.`minor`.
void consistent(int minor) {
  const d::Layout& L = *d::layout_for(minor);
  fake_type(PyType_Type, "type", 920, 40);
  fake_type(PyCode_Type, "code", L.code_basicsize, L.code_itemsize);
  fake_type(PyFrame_Type, "frame", L.frame_basicsize, 8);
  fake_type(PyUnicode_Type, "str", L.unicode_basicsize, 0);
  fake_type(PyBytes_Type, "bytes", L.bytes_sval + 1, 1);
  if (minor != 13) return;
  unsigned char* r = _PyRuntime;  // field positions: layout_gen.c / python_runtime.cpp's mirror
  std::memcpy(r, "xdebugpy", 8);
  put64(r, 8, 0x030D00F0);
  put64(r, 152 + 24, L.ts_interp), put64(r, 152 + 32, L.ts_frame);
  put64(r, 224 + 8, L.fr_previous), put64(r, 224 + 16, L.fr_code), put64(r, 224 + 24, L.fr_instr);
  put64(r, 224 + 40, L.fr_owner);
  put64(r, 272 + 8, L.co_filename), put64(r, 272 + 24, L.co_name), put64(r, 272 + 32, L.co_linetable);
  put64(r, 272 + 40, L.co_firstlineno), put64(r, 272 + 72, L.co_code_adaptive);
  put64(r, 352 + 8, d::kObType);
  put64(r, 512 + 8, L.bytes_size), put64(r, 512 + 16, L.bytes_sval);
  put64(r, 536 + 8, L.uni_state), put64(r, 536 + 16, L.uni_length), put64(r, 536 + 24, L.ascii_size);
}

struct Case {
  const char* name;
  const char* version;
  void (*setup)();
  Status want;
  const char* why_has;
};

const Case kCases[] = {
#ifdef VT_FAKE_DEBUG_BUILD
    {"debug build", "3.12.1 (main)", [] { consistent(12); }, Status::kUnsupported, "debug build"},
#else
    {"3.10 consistent", "3.10.13 (main)", [] { consistent(10); }, Status::kOk, "ok"},
    {"3.11 consistent", "3.11.7 (main)", [] { consistent(11); }, Status::kOk, "ok"},
    {"3.12 consistent", "3.12.1 (main)", [] { consistent(12); }, Status::kOk, "ok"},
    {"3.13 consistent", "3.13.0 (main)", [] { consistent(13); }, Status::kOk, "ok"},
    {"3.14", "3.14.0 (main)", [] { consistent(13); }, Status::kUnsupported, "unsupported Python version"},
    {"3.9", "3.9.18 (main)", [] { consistent(10); }, Status::kUnsupported, "unsupported Python version"},
    {"2.7", "2.7.18 (default)", [] {}, Status::kUnsupported, "unsupported Python version"},
    {"free-threaded string", "3.13.0 experimental free-threading build (main)", [] { consistent(13); },
     Status::kUnsupported, "free-threaded"},
    {"code size", "3.12.1 (main)", [] { consistent(12), put64(PyCode_Type, d::kTpBasicsize, 200); },
     Status::kUnsupported, "sizeof(code)"},
    {"trace-refs header", "3.11.7 (main)",  // Py_TRACE_REFS: two extra pointers before ob_type
     [] { consistent(11), put64(PyCode_Type, d::kObType, 0); }, Status::kUnsupported, "not a type"},
    {"3.13 offset", "3.13.0 (main)", [] { consistent(13), put64(_PyRuntime, 152 + 32, 80); },
     Status::kUnsupported, "thread_state.current_frame"},
    {"3.13 free-threaded flag", "3.13.0 (main)", [] { consistent(13), put64(_PyRuntime, 16, 1); },
     Status::kUnsupported, "free-threaded"},
    {"3.13 cookie", "3.13.0 (main)", [] { consistent(13), std::memcpy(_PyRuntime, "nodebug!", 8); },
     Status::kUnsupported, "cookie"},
#endif
};

// In the child: set up, init(), check. Exit status 0 = as expected.
int run_case(const Case& c) {
  g_version = c.version;
  c.setup();
  const char* why = nullptr;
  Status s = vt::py::init(&why);
  bool ok = s == c.want && why && std::strstr(why, c.why_has);
  vt::py::RawFrame raw[4];
  vt::py::CodeInfo info;
  // Whatever init() said, nothing may be reported: no thread has a (fake) thread state.
  ok = ok && vt::py::capture(raw, 4) == 0 && !vt::py::thread_has_state() &&
       !vt::py::describe_code(reinterpret_cast<uint64_t>(PyBytes_Type), &info);
  std::printf("%s: %s: status %d, why \"%s\"\n", ok ? "ok" : "FAIL", c.name, static_cast<int>(s), why ? why : "");
  std::fflush(stdout);  // the child leaves with _exit
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  int failed = 0;
  for (const Case& c : kCases) {
    std::fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(run_case(c));
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failed;
  }
  std::printf("%d of %zu cases failed\n", failed, sizeof kCases / sizeof kCases[0]);
  return failed != 0;
}
