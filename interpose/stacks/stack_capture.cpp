// See stack_capture.h.
#include "load_steps.h"
#include "stack_capture.h"

#include <pthread.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <atomic>

#include "clock.h"
#include "env_config.h"
#include "fast_unwind.h"
#include "log.h"
#include "native_stack.h"
#include "own_work.h"
#include "python_code_index.h"
#include "python_frames.h"
#include "recorder_internal.h"
#include "stack_index.h"
#include "thread_block.h"
#include "unwinder_library.h"
#include "meta_records.h"

namespace vt {

std::atomic<int> g_python_state{format::kPythonOff};

namespace {

using format::kPythonOff, format::kPythonOn, format::kPythonRefused;  // the config record's values

std::atomic<const char*> g_python_why{""};

bool g_unwinder_missing = false;  // stacks were asked for, libunwind could not be opened

// One line of ours in the trace (a note record: reports show it as "note: the recorder: ...").
void write_note(const char* text, uint64_t t = now_ns()) {
  uint8_t buf[320];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::NoteSchema>(p, format::NoteRecord{format::Text(text, strnlen(text, 256))});
  write_meta(format::kTagNote, p.data(), p.size(), t);
}

// The walker's later verdicts (its self-check on the main thread): one line in the trace (a note
// record) and, when frames go off, one on stderr. Runs on a Python thread, never under our locks.
void python_status_changed(bool on, const char* why) {
  g_python_why.store(why);
  if (!on) {
    g_python_state.store(kPythonRefused);
    log_line_once_per_run("Python frames off: %s", why);
  }
  char text[256];
  if (snprintf(text, sizeof text, "Python frames %s: %s", on ? "on" : "off", why) > 0) write_note(text);
}

// Per thread, what makes its repeated Python stacks cheap (issue 14): the walker's memo of frames
// seen before, and the previous Python part of its stack with that part's hash, so an unchanged
// Python part costs a memcmp instead of a hash. Mapped on the thread's first Python capture
// (~10 KiB, once: not from the heap), unmapped when the thread exits.
struct PyThreadMemo {
  py::KeyMemo keys;
  const uint64_t* frames;  // the last capture_stack() buffer of the thread, its size and where its
  int n, py_from;          // Python part starts (stack_id() gets the same buffer right after)
  int prev_n;
  uint64_t prev_hash;
  uint64_t prev[kMaxPythonFrames];
};
thread_local PyThreadMemo* t_memo __attribute__((tls_model("initial-exec"))) = nullptr;
thread_local bool t_memo_failed __attribute__((tls_model("initial-exec"))) = false;
pthread_key_t g_memo_key;
bool g_memo_key_ok = false;

// Runs in the exiting thread. Hooks may still run after it (other keys' destructors freeing
// memory): they go without a memo rather than map a new one.
void free_memo(void* m) {
  t_memo = nullptr;
  t_memo_failed = true;
  munmap(m, sizeof(PyThreadMemo));
}

PyThreadMemo* thread_memo() {
  if (PyThreadMemo* m = t_memo) return m;
  if (t_memo_failed || !g_memo_key_ok) return nullptr;
  void* p = map_thread_block(g_memo_key, sizeof(PyThreadMemo));
  if (!p) {
    t_memo_failed = true;  // no memo for this thread: correct, just slower
    return nullptr;
  }
  return t_memo = static_cast<PyThreadMemo*>(p);
}

// Finding the interpreter does dlsym lookups (the loader lock): done in our constructor, before
// any hook can run under an allocator lock, as the walker's notes ask.
void find_python_early() {
  const char* py = getenv("VRAMTRACE_PYTHON");
  if (py && strcmp(py, "0") == 0) return;
  const char* why = "";
  OwnWork own;  // the program's errno at main() is its own
  py::Status s = py::init(&why);
  g_python_why.store(why ? why : "");
  g_python_state.store(s == py::Status::kOk ? kPythonOn : s == py::Status::kUnsupported ? kPythonRefused : kPythonOff);
  if (s == py::Status::kOk) {
    py::set_status_listener(python_status_changed);
    g_memo_key_ok = pthread_key_create(&g_memo_key, free_memo) == 0;
  }
}

}  // namespace

std::atomic<bool> g_free_stacks{false};

void configure_stacks(const Config& cfg) {
  configure_native_stacks(cfg.stack_depth);
  g_free_stacks.store(cfg.free_stacks, std::memory_order_relaxed);
  g_unwinder_mode.store(cfg.unwinder, std::memory_order_relaxed);
  g_unwinder_missing = cfg.stack_depth > 0 && !unwinder();
  if (g_unwinder_missing) log_line_once_per_run("native stacks off: %s", unwinder_error());
  if (!cfg.python) {
    g_python_state.store(kPythonOff);
  } else if (g_python_state.load() == kPythonRefused) {
    log_line_once_per_run("Python frames off: %s", g_python_why.load());  // once, when the trace opens
  } else if (g_python_state.load() == kPythonOn && strcmp(g_python_why.load(), "ok") != 0) {
    log_line_once_per_run("Python frames: %s", g_python_why.load());  // a newer CPython, pending its self-check
  }
}

namespace {
std::atomic<FrameBorrower> g_borrower{nullptr};
}  // namespace

void set_frame_borrower(FrameBorrower borrower) { g_borrower.store(borrower, std::memory_order_relaxed); }

int add_python_frames(uint64_t* frames, int n) {
  if (g_python_state.load(std::memory_order_relaxed) != kPythonOn) return n;
  // One key per Python frame (the code object's address, the instruction, the entry flag), written
  // by the walker in place: cheap to hash; code ids are only looked up for stacks seen first.
  PyThreadMemo* m = thread_memo();
  int k = py::capture_keys(frames + n, kMaxPythonFrames, m ? &m->keys : nullptr);
  // No frames of its own: a registered borrower may lend some (PyTorch's autograd workers get those
  // of the thread waiting in the engine for them: backward_context.h).
  if (k == 0)
    if (FrameBorrower b = g_borrower.load(std::memory_order_relaxed); __builtin_expect(b != nullptr, 0))
      k = b(frames + n, kMaxPythonFrames);
  if (m) m->frames = frames, m->n = n + k, m->py_from = n;
  return n + k;
}

static_assert(py::kKeyPython == format::kFramePython, "a key is told from a native address by the same bit");

namespace {
// Key frames (as captured) -> the frames written to the trace (code ids instead of addresses).
int to_trace_frames(const uint64_t* key, int n, uint64_t* out, uint64_t t) {
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (!py::is_python_key(key[i])) {
      out[m++] = key[i];
      continue;
    }
    py::RawFrame f = py::unpack_key(key[i]);
    if (uint32_t id = python_code_id(f.code, t)) out[m++] = format::python_frame(id, f.instr, f.entry);
  }
  return m;
}
}  // namespace

// The hash of a stack with Python frames is that of its native part continued from the hash of its
// Python part (the suffix of keys); the thread's previous Python part, when unchanged, lends its
// hash. Stacks without Python frames hash as intern_stack() would.
uint32_t stack_id(const uint64_t* frames, int n, uint64_t t) {
  if (n <= 0) return 0;
  PyThreadMemo* m = t_memo;
  int py_from = n;
  if (m && m->frames == frames && m->n == n) {
    py_from = m->py_from;
  } else {
    while (py_from > 0 && py::is_python_key(frames[py_from - 1])) --py_from;
  }
  uint64_t seed = 0;
  if (int k = n - py_from; k > 0) {
    const uint64_t* py = frames + py_from;
    size_t bytes = size_t(k) * sizeof *py;
    if (m && k == m->prev_n && memcmp(py, m->prev, bytes) == 0) {
      seed = m->prev_hash;
    } else {
      seed = hash_frames(py, k, 0);
      if (m && k <= kMaxPythonFrames) memcpy(m->prev, py, bytes), m->prev_n = k, m->prev_hash = seed;
    }
  }
  return intern_stack_hashed(frames, n, seed ? hash_frames(frames, py_from, seed) : hash_frames(frames, n, 0), t,
                             to_trace_frames);
}


void write_stack_config(uint64_t t) {
  const char* why = g_python_why.load();
  format::ConfigRecord r{uint64_t(native_stack_depth()), uint64_t(g_python_state.load()), format::Text(why, strnlen(why, 200))};
  uint8_t buf[256];
  format::PayloadWriter p(buf, sizeof buf);
  format::encode<format::ConfigSchema>(p, r);
  write_meta(format::kTagConfig, p.data(), p.size(), t);
  if (g_unwinder_missing) {
    char text[256];
    snprintf(text, sizeof text, "native stacks off: %s", unwinder_error());
    write_note(text, t);
  }
}

}  // namespace vt

// This file's load-time step(s), run in order by load_time.cpp.
namespace vt::load_steps {
void find_python_early() { vt::find_python_early(); }
}  // namespace vt::load_steps
