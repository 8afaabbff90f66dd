// A program that does what real programs do to the process around a tracer: daemons closing
// every descriptor, code that reopens descriptor 2 onto a data file, chdir, threads with pending
// cancellations, signal handlers that make CUDA calls, a tracer's file renamed away. Runs the
// steps given on its command line, in order:
//   pairs N          N x (cuMemAlloc_v2 + cuMemFree_v2, cuMemAllocAsync + cuMemFreeAsync)
//   jit N            the same, called through generated code without unwind information (as JIT
//                    code is), so that an unwinder has to guess and validate that frame (x86-64)
//   close-fds        close every descriptor from 3 to the soft RLIMIT_NOFILE (at most 65536)
//   open NAME        open NAME (O_RDWR|O_CREAT|O_TRUNC) as a data file; prints its number
//   mix N            N x (one pair, then 256 bytes of a counting pattern to every data file)
//   stderr-to NAME   close descriptor 2 and open NAME, which becomes descriptor 2
//   say TEXT         the program writes TEXT and a newline to its own descriptor 2
//   nofile N         RLIMIT_NOFILE (soft and hard) N
//   chdir DIR
//   cancel-first     a thread whose deferred cancel is pending makes the process's first memory
//                    call (one pair), then reaches pthread_testcancel()
//   cancel T N       T threads with a pending cancel make N pairs each, then pthread_testcancel()
//   signals T N      T threads make N pairs each while another thread keeps sending them SIGUSR1
//   handler-fork     the first SIGUSR1's handler forks a child that allocates 3 x 12345 bytes and
//                    leaves with _exit(0) (the parent's handler waits for it; exit 8 if it failed)
//   handler-pairs N  each SIGUSR1 makes the handler run N cuMemAlloc_v2 + cuMemFree_v2 pairs
//                    (default 1; SIGUSR1 may also come from FAKECUDA_RAISE)
//   lose-trace       renames every file in $VRAMTRACE_OUTPUT (a directory) to <name>.lost
//   tally FILE       writes "calls N" to FILE: the memory calls made, handlers' included
//   exit N           exit status N (default 0)
// stdout is a log of the steps that depends on nothing but the steps (descriptor numbers
// included): the tests compare it, the data files and the exit status with an untraced run.
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "workload.h"

namespace {

CUcontext g_ctx;
std::atomic<long> g_calls{0};     // memory calls made, handlers' included
std::atomic<long> g_failures{0};  // failed ones (there should be none)
std::atomic<int> g_handler_pairs{1};
std::vector<int> g_data;          // descriptors opened by `open`
long g_pattern = 0;

void counted(CUresult r) {
  g_calls.fetch_add(1, std::memory_order_relaxed);  // a failed call is an event too
  if (r != CUDA_SUCCESS) g_failures.fetch_add(1, std::memory_order_relaxed);
}

void one_pair(size_t size) {
  CUdeviceptr p;
  counted(cuMemAlloc(&p, size));
  counted(cuMemFree(p));
  counted(cuMemAllocAsync(&p, size + 512, nullptr));
  counted(cuMemFreeAsync(p, nullptr));
}

long g_jit_pairs = 0;
void jit_body() {
  for (long k = 0; k < g_jit_pairs; ++k) one_pair(4096 + size_t(k % 64) * 512);
}

// Calls jit_body from a frame of generated code: push rbp; mov rbp, rsp; call *rdi; pop rbp; ret.
void call_through_jit(long pairs) {
  g_jit_pairs = pairs;
#if defined(__x86_64__)
  static void (*stub)(void (*)()) = nullptr;
  if (!stub) {
    static const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};
    void* m = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) exit(12);
    memcpy(m, code, sizeof code);
    if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0) exit(12);
    stub = reinterpret_cast<void (*)(void (*)())>(m);
  }
  stub(jit_body);
#else
  jit_body();
#endif
}

std::atomic<bool> g_handler_fork{false};

void on_usr1(int) {
  int saved = errno;
  if (g_handler_fork.exchange(false)) {  // once: a child that allocates 3 x 12345 bytes and leaves
    pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < 3; ++i) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, 12345) != CUDA_SUCCESS) _exit(7);
      }
      _exit(0);
    }
    int status = 0;
    if (child > 0) waitpid(child, &status, 0);
    if (child < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) _exit(8);
  }
  int n = g_handler_pairs.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    CUdeviceptr p;
    counted(cuMemAlloc(&p, 8192 + size_t(i)));
    counted(cuMemFree(p));
  }
  errno = saved;
}

void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      printf("write to descriptor %d failed: %s\n", fd, strerror(errno));
      exit(12);
    }
    p += w;
    n -= size_t(w);
  }
}

void close_fds() {
  rlimit lim;
  long top = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? long(lim.rlim_cur) : 1024;
  if (top > 65536) top = 65536;
  for (long fd = 3; fd < top; ++fd) close(int(fd));
  g_data.clear();
}

// ---- threads ----

struct CancelArgs {
  std::atomic<int>* stage;
  int pairs;
  std::atomic<int> done{0};
};

void* cancelled_worker(void* arg) {
  auto* a = static_cast<CancelArgs*>(arg);
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  a->stage->fetch_add(1);
  while (a->stage->load() >= 0) sched_yield();  // main sets it to -1 once every cancel is sent
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);  // the cancel is pending from here on
  if (cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS) g_failures.fetch_add(1);
  for (int i = 0; i < a->pairs; ++i) one_pair(4096 + size_t(i % 64) * 512);
  a->done.store(1);
  pthread_testcancel();
  a->done.store(2);  // never reached
  return nullptr;
}

void run_cancelled(int threads, int pairs, const char* what) {
  std::atomic<int> stage{0};
  std::vector<CancelArgs> args(threads);
  std::vector<pthread_t> ids(threads);
  for (int t = 0; t < threads; ++t) {
    args[t].stage = &stage;
    args[t].pairs = pairs;
    pthread_create(&ids[t], nullptr, cancelled_worker, &args[t]);
  }
  while (stage.load() < threads) sched_yield();
  for (pthread_t id : ids) pthread_cancel(id);
  stage.store(-1);
  int cancelled = 0, returned = 0;
  for (int t = 0; t < threads; ++t) {
    void* res = nullptr;
    pthread_join(ids[t], &res);
    cancelled += res == PTHREAD_CANCELED;
    returned += args[t].done.load() == 1;
  }
  printf("%s: %d threads, %d returned from their %d pairs, %d cancelled at pthread_testcancel\n", what, threads,
         returned, pairs, cancelled);
}

struct SignalArgs {
  int pairs;
  std::atomic<int>* running;
  std::atomic<bool>* sending;
};

void* signalled_worker(void* arg) {
  auto* a = static_cast<SignalArgs*>(arg);
  if (cuCtxSetCurrent(g_ctx) != CUDA_SUCCESS) g_failures.fetch_add(1);
  CUcontext c;
  cuCtxGetCurrent(&c);  // builds this thread's context stack before any handler runs
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);  // the handler needs the context set above
  for (int i = 0; i < a->pairs; ++i) one_pair(4096 + size_t(i % 64) * 512);
  a->running->fetch_sub(1);
  // No signal may reach a thread that is exiting (its thread_locals are being destroyed).
  while (a->sending->load()) sched_yield();
  pthread_sigmask(SIG_BLOCK, &usr1, nullptr);
  return nullptr;
}

void run_signals(int threads, int pairs) {
  std::atomic<int> running{threads};
  std::atomic<bool> sending{true};
  SignalArgs args{pairs, &running, &sending};
  std::vector<pthread_t> ids(threads);
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, &old);  // workers start with it blocked
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], nullptr, signalled_worker, &args);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  while (running.load() > 0) {
    for (pthread_t id : ids)
      if (running.load() > 0) pthread_kill(id, SIGUSR1);
    timespec ts{0, 20000};
    nanosleep(&ts, nullptr);
  }
  sending.store(false);
  for (pthread_t id : ids) pthread_join(id, nullptr);
  printf("signals: %d threads made %d pairs each under signal churn\n", threads, pairs);
}

void lose_trace() {
  const char* dir = getenv("VRAMTRACE_OUTPUT");
  if (!dir) return;
  DIR* d = opendir(dir);
  if (!d) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') names.push_back(std::string(dir) + "/" + e->d_name);
  closedir(d);
  for (const std::string& n : names) rename(n.c_str(), (n + ".lost").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  struct sigaction sa = {};
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);

  CUdevice dev;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&g_ctx, dev));
  CHECK(cuCtxSetCurrent(g_ctx));
  CUcontext c;
  cuCtxGetCurrent(&c);

  int status = 0;
  std::string tally;
  for (int i = 1; i < argc; ++i) {
    std::string step = argv[i];
    auto arg = [&](int k) -> const char* {
      if (i + k >= argc) {
        fprintf(stderr, "hostile: %s needs %d argument(s)\n", step.c_str(), k);
        exit(2);
      }
      return argv[i + k];
    };
    if (step == "pairs") {
      long n = atol(arg(1));
      for (long k = 0; k < n; ++k) one_pair(4096 + size_t(k % 64) * 512);
      printf("pairs %ld\n", n);
      i += 1;
    } else if (step == "jit") {
      long n = atol(arg(1));
      call_through_jit(n);
      printf("jit %ld\n", n);
      i += 1;
    } else if (step == "close-fds") {
      close_fds();
      printf("close-fds\n");
    } else if (step == "open") {
      int fd = open(arg(1), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) {
        printf("open %s failed: %s\n", arg(1), strerror(errno));
        return 12;
      }
      g_data.push_back(fd);
      printf("open %s -> descriptor %d\n", arg(1), fd);
      i += 1;
    } else if (step == "mix") {
      long n = atol(arg(1));
      char block[256];
      for (long k = 0; k < n; ++k) {
        one_pair(4096 + size_t(k % 64) * 512);
        for (int fd : g_data) {
          for (size_t b = 0; b < sizeof block; ++b) block[b] = char('a' + (g_pattern + long(b)) % 26);
          ++g_pattern;
          write_all(fd, block, sizeof block);
        }
      }
      printf("mix %ld\n", n);
      i += 1;
    } else if (step == "stderr-to") {
      close(2);
      int fd = open(arg(1), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      printf("stderr-to %s -> descriptor %d\n", arg(1), fd);
      i += 1;
    } else if (step == "say") {
      std::string line = std::string(arg(1)) + "\n";
      write_all(2, line.data(), line.size());
      i += 1;
    } else if (step == "nofile") {
      struct rlimit lim = {rlim_t(atol(arg(1))), rlim_t(atol(arg(1)))};
      if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
        printf("nofile %s failed: %s\n", arg(1), strerror(errno));
        return 13;
      }
      printf("nofile %s\n", arg(1));
      i += 1;
    } else if (step == "chdir") {
      if (chdir(arg(1)) != 0) {
        printf("chdir %s failed: %s\n", arg(1), strerror(errno));
        return 12;
      }
      printf("chdir\n");
      i += 1;
    } else if (step == "cancel-first") {
      run_cancelled(1, 1, "cancel-first");
    } else if (step == "cancel") {
      run_cancelled(atoi(arg(1)), atoi(arg(2)), "cancel");
      i += 2;
    } else if (step == "signals") {
      run_signals(atoi(arg(1)), atoi(arg(2)));
      i += 2;
    } else if (step == "handler-fork") {
      g_handler_fork.store(true);
    } else if (step == "handler-pairs") {
      g_handler_pairs.store(atoi(arg(1)));
      i += 1;
    } else if (step == "lose-trace") {
      lose_trace();
      printf("lose-trace\n");
    } else if (step == "tally") {
      tally = arg(1);
      i += 1;
    } else if (step == "exit") {
      status = atoi(arg(1));
      i += 1;
    } else {
      fprintf(stderr, "hostile: unknown step %s\n", step.c_str());
      return 2;
    }
  }
  for (int fd : g_data) close(fd);
  printf("failed calls %ld\n", g_failures.load());
  if (!tally.empty()) {
    FILE* f = fopen(tally.c_str(), "w");
    if (f) {
      fprintf(f, "calls %ld\n", g_calls.load());
      fclose(f);
    }
  }
  return status;
}
