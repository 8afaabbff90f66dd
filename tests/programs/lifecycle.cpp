// Process life-cycle cases for the recorder. Every mode allocates through the driver (-lcuda):
//   fork           parent 1 MiB, child 2 MiB (then exit), parent 3 MiB after the child is done
//   exec           1 MiB, then fork + exec of "child"            (child: 7 MiB)
//   exec-same-pid  1 MiB, then exec of "child" in this process   (same pid, second file)
//   child          7 MiB
//   crash-kill N / crash-abort N / crash-segv N / crash-exit N
//                  N allocations of 4 KiB, then SIGKILL / abort() / SIGSEGV / _exit(0)
//   exit-code N    one allocation, then exit with status N
//   quick-exit N   N allocations of 4 KiB, then _Exit(3): no exit handlers, a status of its own
//   no-getpid      prints its pid, then a seccomp filter makes getpid fail (EPERM), then 1 MiB
//   no-fstatat     the same with newfstatat (every stat and fstat of glibc 2.33+) failing
//   std-quick-exit 1 MiB, then quick_exit(6) (its at_quick_exit handler frees it first)
//   vfork-exit     1 MiB, a vfork child that calls _exit(0) at once, then 3 MiB and a normal exit
//   release-last   1 MiB in the primary context, then its last cuDevicePrimaryCtxRelease
//   release-extra  the same with a second reference held: the context survives
//   hold [MiB]     5 MiB (or MiB) and 3 MiB from two call sites, then wait (up to 30 s) to be killed
//   hold-fork      the same, after forking a child that only waits (and dies with the parent)
//   init-only      cuInit and a context, no memory call: must leave no trace
//   none           never touches CUDA: must leave no trace
//   fork-first US  a fork US microseconds after another thread began the first memory call
//                  (fork_first below); the child must not hang
//   fork-in-walk F another thread inside dl_iterate_phdr (the loader's list lock held) at a fork;
//                  F=first: before this process's first memory call, F=later: after it. The child
//                  allocates under a 10 s alarm (exit 0; 1 a failed call; 2 killed: it hung)
//   main-exit      1 MiB, then the main thread leaves with pthread_exit(): the process ends with
//                  status 0 once its last thread has (a thread of ours must not keep it alive)
//   small-stack KIB the first memory call on a thread with a KIB KiB stack
//   fds-held       1 MiB, then the descriptors open from 3 up (prints "fds N"): vramtrace's are the
//                  trace file's, libunwind's pipe is none
//   nofile-4       RLIMIT_NOFILE 4 (one free descriptor), 1 MiB (the first call: the trace opens), then fopen of
//                  /dev/null must work (exit 0; 4: it failed, a descriptor of ours took its place)
//   fork-dirty     1 MiB, then a fork whose child prints "dirty N": its private dirty KiB (what the
//                  fork handlers wrote: each page stored to is copied into the child)
//   altstack-alloc KIB  a signal handler on a KIB KiB alternate stack (a guard page below it)
//                  allocates 1 MiB and frees it, then 2 MiB from main (exit 0; SIGSEGV: overflow)
//   chdir-first DIR  chdir(DIR), then 1 MiB (the first memory call)
//   clearenv-first   clearenv(), then 1 MiB
//   fds-exhausted    every descriptor taken (RLIMIT_NOFILE 64), then 1 MiB
//   raw-fork       1 MiB, a child of syscall(SYS_fork) that calls exit(4), then 3 MiB (exit 5:
//                  traced, and this process's /dev/shm summary was gone after the child)
//   raw-fork-alloc 1 MiB, a child of syscall(SYS_fork) that allocates 2 MiB and leaves with
//                  _exit(0), then 3 MiB: the child's allocation is the child's, not the parent's
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "workload.h"

static void setup() {
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
}

static void alloc(size_t n) {
  CUdeviceptr p;
  CHECK(cuMemAlloc(&p, n));
}

__attribute__((noinline)) static void hold_second_site() {
  alloc(3 << 20);
  asm volatile("" ::: "memory");
}

// A child that allocates 8 KiB under a 10 s alarm and exits 0 (1: the call failed); killed by
// the alarm when it hangs.
static pid_t fork_child_that_allocates() {
  pid_t c = fork();
  if (c == 0) {
    alarm(10);
    CUdeviceptr p;
    _exit(cuMemAlloc(&p, 8192) == CUDA_SUCCESS ? 0 : 1);
  }
  return c;
}

// fork-first US: another thread makes the process's first memory call (which opens the trace and
// sets up the unwinder) while this one forks US microseconds later; the child allocates, under a
// 10 s alarm, and the exit status says how it ended (0; 1 a failed call; 2 killed: it hung).
static int fork_first(long delay_us) {
  static CUcontext ctx;
  CHECK(cuCtxGetCurrent(&ctx));
  pthread_t t;
  pthread_create(
      &t, nullptr,
      [](void*) -> void* {
        CHECK(cuCtxSetCurrent(ctx));
        alloc(4096);
        return nullptr;
      },
      nullptr);
  if (delay_us) usleep(useconds_t(delay_us));
  pid_t c = fork_child_that_allocates();
  int st = 0;
  waitpid(c, &st, 0);
  pthread_join(t, nullptr);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

// fork-in-walk: glibc's fork resets the loader's big lock in the child, not the lock that
// dl_iterate_phdr holds (the list lock): a thread inside it at the fork leaves the child's list
// locked forever. The program's child never walks the list; a recorder that walks it (to unwind
// a stack) must not hang that child.
static int fork_in_walk(bool after_first) {
  if (after_first) alloc(1 << 20);
  static std::atomic<int> phase{0};
  pthread_t t;
  pthread_create(
      &t, nullptr,
      [](void*) -> void* {
        dl_iterate_phdr(
            [](dl_phdr_info*, size_t, void*) -> int {
              phase.store(1);
              while (phase.load() != 2) usleep(1000);
              return 1;
            },
            nullptr);
        return nullptr;
      },
      nullptr);
  while (phase.load() != 1) usleep(1000);
  pid_t c = fork_child_that_allocates();
  int st = 0;
  waitpid(c, &st, 0);
  phase.store(2);
  pthread_join(t, nullptr);
  alloc(2 << 20);  // this process's own walks go on
  return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

// small-stack KIB: the process's first memory call (which opens the trace) on a thread whose
// stack is KIB KiB: Python's smallest (threading.stack_size) is 32.
static int small_stack(long kib) {
  static CUcontext ctx;
  CHECK(cuCtxGetCurrent(&ctx));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(kib) << 10);
  pthread_t t;
  if (pthread_create(
          &t, &attr,
          [](void*) -> void* {
            CHECK(cuCtxSetCurrent(ctx));
            alloc(4096);
            return nullptr;
          },
          nullptr) != 0)
    return 3;
  pthread_join(t, nullptr);
  return 0;
}

// The alternate stack's handler: one allocation and its free (kept: the trace shows it).
static void alloc_in_handler(int) {
  CUdeviceptr p;
  CHECK(cuMemAlloc(&p, 1 << 20));
  CHECK(cuMemFree(p));
}

static int altstack_alloc(long kib) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE)), size = size_t(kib) << 10;
  char* m = static_cast<char*>(mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) != 0) return 3;
  stack_t ss{};
  ss.ss_sp = m + page;
  ss.ss_size = size;
  if (sigaltstack(&ss, nullptr) != 0) return 3;
  struct sigaction sa{};
  sa.sa_handler = alloc_in_handler;
  sa.sa_flags = SA_ONSTACK;
  sigaction(SIGUSR1, &sa, nullptr);
  raise(SIGUSR1);
  alloc(2 << 20);
  return 0;
}

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "none";
  long n = argc > 2 ? atol(argv[2]) : 0;
  if (mode == "none") return 0;
  setup();
  if (mode == "fork-first") return fork_first(n);
  if (mode == "small-stack") return small_stack(n);
  if (mode == "altstack-alloc") return altstack_alloc(n);
  if (mode == "fork-dirty") {
    alloc(1 << 20);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      FILE* f = fopen("/proc/self/smaps_rollup", "r");
      char line[256];
      long kib = -1;
      while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Private_Dirty:", 14) == 0) kib = atol(line + 14);
      printf("dirty %ld\n", kib);
      fflush(stdout);
      _exit(kib < 0 ? 3 : 0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
  }
  if (mode == "fds-held") {
    alloc(1 << 20);
    alloc(1 << 20);  // (unwound twice: libunwind's memory check has run)
    int count = 0;
    for (int fd = 3; fd < 1024; ++fd)
      if (fcntl(fd, F_GETFD) >= 0) ++count;
    printf("fds %d\n", count);
    return 0;
  }
  if (mode == "nofile-4") {  // (4 when only 0-2 are open; one more per descriptor inherited)
    int lowest = dup(0);
    if (lowest < 0) return 3;
    close(lowest);
    struct rlimit lim = {rlim_t(lowest) + 1, rlim_t(lowest) + 1};
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) return 3;
    alloc(1 << 20);
    FILE* f = fopen("/dev/null", "r");
    if (!f) return 4;
    fclose(f);
    alloc(2 << 20);
    return 0;
  }
  if (mode == "main-exit") {
    alloc(1 << 20);
    pthread_exit(nullptr);
  }
  if (mode == "fork-in-walk" && argc > 2) return fork_in_walk(std::string(argv[2]) == "later");
  if (mode == "chdir-first" && argc > 2) {  // moves to argv[2], then its first memory call
    if (chdir(argv[2]) != 0) return 3;
    alloc(1 << 20);
    return 0;
  }
  if (mode == "fds-exhausted") {  // every descriptor taken (limit 64), then the first memory call
    struct rlimit lim = {64, 64};
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) return 3;
    while (open("/dev/null", O_RDONLY) >= 0) {
    }
    alloc(1 << 20);
    return 0;
  }
  if (mode == "clearenv-first") {  // empties its environment, then its first memory call
    clearenv();
    alloc(1 << 20);
    return 0;
  }
  if (mode == "raw-fork") {  // a child of the raw fork system call (no atfork handler) leaves with exit()
    alloc(1 << 20);
    pid_t c = pid_t(syscall(SYS_fork));
    if (c == 0) exit(4);
    int st = 0;
    waitpid(c, &st, 0);
    // Traced, this process's live summary for `top` must still be there (the child removed it).
    std::string summary = "/dev/shm/vramtrace." + std::to_string(getpid());
    if (getenv("LD_PRELOAD") && access(summary.c_str(), F_OK) != 0) return 5;
    alloc(3 << 20);
    return WIFEXITED(st) && WEXITSTATUS(st) == 4 ? 0 : 1;
  }
  if (mode == "no-getpid" || mode == "no-fstatat") {  // a sandbox that denies a system call (seccomp)
    printf("%d\n", int(getpid()));
    fflush(stdout);
    const unsigned denied = mode == "no-getpid" ? SYS_getpid : SYS_newfstatat;
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, denied, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return 90;
    if (mode == "no-getpid" && syscall(SYS_getpid) != -1) return 91;  // the filter works
    alloc(1 << 20);
    return 0;
  }
  if (mode == "std-quick-exit") {
    static CUdeviceptr kept;
    CHECK(cuMemAlloc(&kept, 1 << 20));
    at_quick_exit([] { cuMemFree(kept); });
    quick_exit(6);
  }
  if (mode == "raw-fork-alloc") {  // no atfork handler runs in the child: it holds our parent's state
    alloc(1 << 20);
    pid_t c = pid_t(syscall(SYS_fork));
    if (c == 0) {
      CUdeviceptr p;
      _exit(cuMemAlloc(&p, 2 << 20) == CUDA_SUCCESS ? 0 : 1);
    }
    int st = 0;
    waitpid(c, &st, 0);
    alloc(3 << 20);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
  }
  if (mode == "init-only") return 0;
  if (mode == "child") {
    alloc(7 << 20);
    return 0;
  }
  if (mode == "release-last" || mode == "release-extra") {
    alloc(1 << 20);
    CUdevice dev;
    CUcontext again;
    CHECK(cuDeviceGet(&dev, 0));
    if (mode == "release-extra") CHECK(cuDevicePrimaryCtxRetain(&again, dev));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    return 0;
  }
  if (mode == "hold" || mode == "hold-fork") {
    alloc(size_t(argc > 2 ? atoi(argv[2]) : 5) << 20);
    hold_second_site();
    if (mode == "hold-fork" && fork() == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      alarm(30);
      for (;;) pause();
    }
    alarm(30);  // never outlive a test that forgot us
    for (;;) pause();
  }
  if (mode == "quick-exit") {
    for (long i = 0; i < n; ++i) alloc(4096);
    _Exit(3);
  }
  if (mode == "vfork-exit") {
    alloc(1 << 20);
    pid_t pid = vfork();
    if (pid == 0) _exit(0);  // shares our memory (and the trace's mapping): must not close it
    int st;
    waitpid(pid, &st, 0);
    alloc(3 << 20);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  if (mode == "exit-code") {
    alloc(1 << 20);
    return int(n);
  }
  if (mode == "fork") {
    alloc(1 << 20);
    pid_t pid = fork();
    if (pid == 0) {
      alloc(2 << 20);
      exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    alloc(3 << 20);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  if (mode == "exec") {
    alloc(1 << 20);
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], "child", (char*)nullptr);
      _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  if (mode == "exec-same-pid") {
    alloc(1 << 20);
    execl("/proc/self/exe", argv[0], "child", (char*)nullptr);
    return 127;
  }
  if (mode.rfind("crash-", 0) == 0) {
    for (long i = 0; i < n; ++i) alloc(4096);
    if (mode == "crash-kill") raise(SIGKILL);
    if (mode == "crash-abort") abort();
    if (mode == "crash-segv") raise(SIGSEGV);
    if (mode == "crash-exit") _exit(0);
    return 5;
  }
  fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
