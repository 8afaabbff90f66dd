// Test shim for the Python frame walker, loaded into CPython with ctypes: CDLL calls run with the
// GIL released (like PyTorch's bindings at cudaMalloc time), PyDLL calls with it held. Exposes
// capture-and-format, the deadlock probe (capture while holding a mutex that a GIL holder waits
// for), captures from a plain pthread and from a thread with a frameless thread state, the
// GIL-holding self-test, a line-table oracle for exhaustive checks and a timing loop.
// Links the walker and format/python_lines.cpp only; never libpython.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "python_frames.h"
#include "python_lines.h"

namespace {

// "file:line:qualname\n" per frame, innermost first; returns the frame count or -1 on a failed
// describe_code. Everything on the stack: this runs without the GIL, like the real hook.
int format_frames(char* out, int cap) {
  vt::py::RawFrame raw[64];
  int n = vt::py::capture(raw, 64);
  int o = 0;
  if (cap > 0) out[0] = '\0';
  vt::py::CodeInfo info;  // ~5 KB of stack, like the hook would use
  for (int i = 0; i < n; ++i) {
    if (!vt::py::describe_code(raw[i].code, &info)) return -1;
    int line = vt::format::python_line(info.py_minor, info.linetable, info.linetable_len, info.firstlineno,
                                         raw[i].instr);
    int w = std::snprintf(out + o, cap > o ? cap - o : 0, "%s:%d:%s\n", info.filename, line, info.qualname);
    if (w > 0) o += w;
  }
  return n;
}

long long now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

void sleep_ms(int ms) { usleep(ms * 1000); }

// Deadlock probe state: thread A holds g_mutex and captures; thread B holds the GIL and waits
// for g_mutex. A capture that needed the GIL would hang here.
pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
std::atomic<int> g_a_locked{0}, g_b_waiting{0};

struct ThreadResult {
  int frames = -2;
  int has_state = -1;
};

void* plain_thread(void* arg) {
  auto* r = static_cast<ThreadResult*>(arg);
  vt::py::RawFrame raw[8];
  r->has_state = vt::py::thread_has_state();
  r->frames = vt::py::capture(raw, 8);
  return nullptr;
}

// Like a pt_autograd worker: a thread state (PyGILState_Ensure) but no Python frames, and the
// GIL released (PyEval_SaveThread) while it "allocates".
void* bare_tstate_thread(void* arg) {
  auto* r = static_cast<ThreadResult*>(arg);
  auto ensure = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
  auto release = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "PyGILState_Release"));
  auto save = reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "PyEval_SaveThread"));
  auto restore = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "PyEval_RestoreThread"));
  if (!ensure || !release || !save || !restore) return nullptr;
  int g = ensure();
  void* ts = save();
  vt::py::RawFrame raw[8];
  r->has_state = vt::py::thread_has_state();
  r->frames = vt::py::capture(raw, 8);
  restore(ts);
  release(g);
  return nullptr;
}

int run_thread(void* (*fn)(void*), int* has_state) {
  ThreadResult r;
  pthread_t t;
  if (pthread_create(&t, nullptr, fn, &r) != 0) return -3;
  pthread_join(t, nullptr);
  if (has_state) *has_state = r.has_state;
  return r.frames;
}

// Under LD_PRELOAD with PYALLOC_EARLY_INIT=1, init() runs from this constructor, before
// Py_Initialize, as the preload library's would (run_all.sh's second pass).
__attribute__((constructor)) void early_init() {
  if (const char* e = getenv("PYALLOC_EARLY_INIT"); e && e[0] == '1') vt::py::init(nullptr);
}

}  // namespace

extern "C" {

// 0 unavailable, 1 ok, 2 unsupported (vt::py::Status order); `why` gets the explanation.
int pa_init(char* why, int cap) {
  const char* w = nullptr;
  int s = static_cast<int>(vt::py::init(&w));
  if (why && cap > 0) std::snprintf(why, cap, "%s", w ? w : "");
  return s;
}

int capture_here(char* out, int cap) { return format_frames(out, cap); }

int capture_count() {
  vt::py::RawFrame raw[64];
  return vt::py::capture(raw, 64);
}

int has_state() { return vt::py::thread_has_state(); }

int self_test() { return vt::py::self_test_with_gil(); }

int capture_in_pthread(int* has_state_out) { return run_thread(plain_thread, has_state_out); }

int capture_in_bare_tstate(int* has_state_out) { return run_thread(bare_tstate_thread, has_state_out); }

// Thread A (CDLL, GIL released): take the mutex, wait until B is about to block on it while
// holding the GIL, then capture. Returns the frame count, or -10 if B never showed up.
int capture_locked(char* out, int cap) {
  pthread_mutex_lock(&g_mutex);
  g_a_locked.store(1);
  int waited = 0;
  while (!g_b_waiting.load() && waited < 5000) sleep_ms(1), ++waited;
  sleep_ms(50);  // B is now inside pthread_mutex_lock, GIL held
  int n = g_b_waiting.load() ? format_frames(out, cap) : -10;
  pthread_mutex_unlock(&g_mutex);
  return n;
}

int a_locked() { return g_a_locked.load(); }

// Thread B (PyDLL, GIL held): block on the mutex A holds.
int hold_gil_and_lock() {
  g_b_waiting.store(1);
  pthread_mutex_lock(&g_mutex);
  pthread_mutex_unlock(&g_mutex);
  g_a_locked.store(0);
  g_b_waiting.store(0);
  return 0;
}

// ns per capture(out, max): `iters` calls in batches of 1000; returns the median batch average
// and stores the best batch in *best (the machine may be shared: batches hit by preemption are
// outliers). *frames gets the count per call.
double bench_capture(int iters, int max, int* frames, double* best) {
  vt::py::RawFrame raw[256];
  if (max > 256) max = 256;
  constexpr int kBatch = 1000, kMaxBatches = 4096;
  static double avg[kMaxBatches];
  int batches = iters / kBatch < 1 ? 1 : iters / kBatch > kMaxBatches ? kMaxBatches : iters / kBatch;
  int n = 0;
  for (int i = 0; i < kBatch; ++i) n = vt::py::capture(raw, max);  // warm up
  for (int b = 0; b < batches; ++b) {
    long long t0 = now_ns();
    for (int i = 0; i < kBatch; ++i) {
      n = vt::py::capture(raw, max);
      __asm__ __volatile__("" : : "r"(raw) : "memory");
    }
    avg[b] = static_cast<double>(now_ns() - t0) / kBatch;
  }
  std::sort(avg, avg + batches);
  if (frames) *frames = n;
  if (best) *best = avg[0];
  return avg[batches / 2];
}

// Average ns per describe_code() over the frames capture() sees here (done once per code
// object by the real recorder, so this is a one-time cost per function, not per event).
double bench_describe(int iters, int* frames) {
  vt::py::RawFrame raw[64];
  vt::py::CodeInfo info;
  int n = vt::py::capture(raw, 64);
  if (frames) *frames = n;
  if (n == 0) return 0;
  long long t0 = now_ns();
  for (int i = 0; i < iters; ++i)
    for (int k = 0; k < n; ++k) vt::py::describe_code(raw[k].code, &info);
  return static_cast<double>(now_ns() - t0) / (static_cast<double>(iters) * n);
}

// Line-table oracle for the exhaustive test against code.co_lines().
int line_of(int minor, const unsigned char* table, size_t len, int firstlineno, unsigned instr) {
  return vt::format::python_line(minor, table, len, firstlineno, instr);
}

}  // extern "C"
