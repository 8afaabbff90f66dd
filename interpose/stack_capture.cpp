// See stack_capture.h.
#include "stack_capture.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <atomic>

#include "clock.h"
#include "config.h"
#include "log.h"
#include "native_stack.h"
#include "python_code_index.h"
#include "python_frames.h"
#include "recorder_internal.h"
#include "stack_index.h"
#include "trace_format.h"

namespace vt {

namespace {

enum PythonStatus : int { kPythonOff = 0, kPythonOn = 1, kPythonRefused = 2 };
std::atomic<int> g_python{kPythonOff};
std::atomic<const char*> g_python_why{""};

// The walker's later verdicts (its self-check on the main thread): one line in the trace (a note
// record) and, when frames go off, one on stderr. Runs on a Python thread, never under our locks.
void python_status_changed(bool on, const char* why) {
  g_python_why.store(why);
  if (!on) {
    g_python.store(kPythonRefused);
    log_line("Python frames off: %s", why);
  }
  char text[320];
  int n = snprintf(text, sizeof text, "Python frames %s: %s", on ? "on" : "off", why);
  if (n > 0) write_meta(format::kTagNote, reinterpret_cast<const uint8_t*>(text), strnlen(text, sizeof text), now_ns());
}

// Finding the interpreter does dlsym lookups (the loader lock): done in our constructor, before
// any hook can run under an allocator lock, as the walker's notes ask.
__attribute__((constructor)) void find_python_early() {
  const char* py = getenv("VRAMTRACE_PYTHON");
  if (py && strcmp(py, "0") == 0) return;
  const char* why = "";
  py::Status s = py::init(&why);
  g_python_why.store(why ? why : "");
  g_python.store(s == py::Status::kOk ? kPythonOn : s == py::Status::kUnsupported ? kPythonRefused : kPythonOff);
  if (s == py::Status::kOk) py::set_status_listener(python_status_changed);
}

}  // namespace

void configure_stacks(const Config& cfg) {
  configure_native_stacks(cfg.stack_depth);
  if (!cfg.python) {
    g_python.store(kPythonOff);
  } else if (g_python.load() == kPythonRefused) {
    log_line("Python frames off: %s", g_python_why.load());  // once, when the trace opens
  } else if (g_python.load() == kPythonOn && strcmp(g_python_why.load(), "ok") != 0) {
    log_line("Python frames: %s", g_python_why.load());  // a newer CPython, pending its self-check
  }
}

int capture_stack(uint64_t* frames, int cap, uint64_t caller_ip) {
  int n = capture_native(frames, cap - 2 * kMaxPythonFrames, caller_ip);
  if (g_python.load(std::memory_order_relaxed) != kPythonOn) return n;
  py::RawFrame raw[kMaxPythonFrames];
  int m = py::capture(raw, kMaxPythonFrames);
  // Two slots per Python frame: the code object's address (with the flag bits), then the
  // instruction offset. Cheap to hash; code ids are only looked up for stacks seen first.
  for (int i = 0; i < m; ++i) {
    frames[n++] = format::kFramePython | (raw[i].entry ? format::kFramePyEntry : 0) | raw[i].code;
    frames[n++] = raw[i].instr;
  }
  return n;
}

namespace {
// Key frames (as captured) -> the frames written to the trace (code ids instead of addresses).
int to_trace_frames(const uint64_t* key, int n, uint64_t* out, uint64_t t) {
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (!(key[i] & format::kFramePython)) {
      out[m++] = key[i];
      continue;
    }
    uint64_t code = key[i] & ~(format::kFramePython | format::kFramePyEntry);
    uint32_t instr = i + 1 < n ? uint32_t(key[i + 1]) : 0;
    bool entry = key[i] & format::kFramePyEntry;
    ++i;
    if (uint32_t id = python_code_id(code, t)) out[m++] = format::python_frame(id, instr, entry);
  }
  return m;
}
}  // namespace

uint32_t stack_id(const uint64_t* frames, int n, uint64_t t) { return intern_stack(frames, n, t, to_trace_frames); }

bool python_frames_on() { return g_python.load(std::memory_order_relaxed) == kPythonOn; }

void write_stack_config(uint64_t t) {
  uint8_t payload[256];
  uint8_t* q = payload;
  q = format::put_varint(q, uint64_t(native_stack_depth()));
  q = format::put_varint(q, uint64_t(g_python.load()));
  const char* why = g_python_why.load();
  size_t len = strnlen(why, 200);
  q = format::put_varint(q, len);
  memcpy(q, why, len);
  q += len;
  write_meta(format::kTagConfig, payload, size_t(q - payload), t);
}

}  // namespace vt
