// libtorch_cpu.so's autograd engine, as vramtrace sees it, without PyTorch:
// torch::autograd::Engine::execute with today's signature (the mangled name vramtrace binds), whose
// work runs on one worker thread like pt_autograd_0: it holds a Python thread state and runs no
// Python (PyGILState_Ensure once, then the GIL released for good), and allocates through the
// stand-in caching allocator (libc10_cuda.so) while the calling thread waits.
// Knobs for the test (fae_*): the size the next backward allocates, a Python callback the engine
// calls on the calling thread before the worker's turn (a custom Function's backward running
// autograd.grad: a nested engine call), an exception instead of a result (an OOM rethrown).
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "fake_autograd_types.h"

extern "C" uint64_t fc10_malloc(int dev, uint64_t size);
extern "C" int fc10_free(int dev, uint64_t ptr);

namespace {

// Never destroyed: the worker still waits on them when the process exits (as PyTorch's do).
std::mutex& g_mu = *new std::mutex;
std::condition_variable& g_cv = *new std::condition_variable;
uint64_t g_job_size = 0, g_job_result = 0, g_job_pairs = 0;
bool g_job_pending = false, g_job_done = false;
long g_worker_tid = 0;
std::thread* g_worker = nullptr;

uint64_t g_next_size = 0;
void (*g_callback)() = nullptr;

void worker_main() {
  pthread_setname_np(pthread_self(), "pt_autograd_0");  // PyTorch's name for device 0's worker
  auto ensure = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
  auto save = reinterpret_cast<void* (*)()>(dlsym(RTLD_DEFAULT, "PyEval_SaveThread"));
  if (ensure && save) {
    ensure();
    save();  // the thread state stays; the GIL goes
  }
  std::unique_lock<std::mutex> lock(g_mu);
  g_worker_tid = syscall(SYS_gettid);
  g_cv.notify_all();
  for (;;) {
    g_cv.wait(lock, [] { return g_job_pending; });
    g_job_pending = false;
    uint64_t size = g_job_size, pairs = g_job_pairs;
    lock.unlock();
    for (uint64_t i = 0; i < pairs; ++i) fc10_free(0, fc10_malloc(0, size));  // (bench/run_backward_bench.sh)
    uint64_t p = fc10_malloc(0, size);
    lock.lock();
    g_job_result = p;
    g_job_done = true;
    g_cv.notify_all();
  }
}

// One allocation made by the worker thread while the caller waits.
uint64_t on_worker(uint64_t size) {
  std::unique_lock<std::mutex> lock(g_mu);
  if (!g_worker) {
    g_worker = new std::thread(worker_main);
    g_cv.wait(lock, [] { return g_worker_tid != 0; });
  }
  g_job_size = size;
  g_job_done = false;
  g_job_pending = true;
  g_cv.notify_all();
  g_cv.wait(lock, [] { return g_job_done; });
  return g_job_result;
}

}  // namespace

namespace torch::autograd {
Engine::~Engine() = default;

variable_list Engine::execute(const edge_list&, const variable_list& inputs, bool, bool create_graph, bool,
                              const edge_list&) {
  uint64_t size = g_next_size;
  if (void (*cb)() = g_callback) {
    g_callback = nullptr;
    cb();
  }
  uint64_t p = on_worker(size);
  if (create_graph) throw std::runtime_error("CUDA out of memory (stand-in)");
  variable_list out(inputs.size());
  if (!out.empty()) out[0].impl = reinterpret_cast<void*>(p);
  errno = ENOTRECOVERABLE;  // what the caller must find after the call (a wrapper keeps errno)
  return out;
}
}  // namespace torch::autograd

extern "C" {
FAKE_EXPORT void fae_set_size(uint64_t size) { g_next_size = size; }
FAKE_EXPORT void fae_set_callback(void (*cb)()) { g_callback = cb; }
// The worker allocates outside any engine call (its events must borrow nothing).
FAKE_EXPORT uint64_t fae_worker_alloc(uint64_t size) { return on_worker(size); }
FAKE_EXPORT long fae_worker_tid() { return g_worker_tid; }
FAKE_EXPORT uint64_t fae_last_alloc() { return g_job_result; }
// Before each job's allocation the worker also makes `pairs` malloc/free pairs (block events).
FAKE_EXPORT void fae_set_pairs(uint64_t pairs) { g_job_pairs = pairs; }
}
