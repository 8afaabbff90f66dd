// Which files a traced process's other threads open while its main thread goes on: this program's
// own open()/openat() stand in front of libc's (the executable's definitions come first in the
// lookup, the preloaded library's calls included) and count those made on threads other than
// the main one. It creates a context, allocates, then waits through several rounds of vramtrace's
// sampler thread (250 ms each) and prints the count and the last path. A helper thread that opens
// a file for a moment takes the lowest free descriptor, and a program open() at that moment gets
// another number than untraced (e2e: the sampler read /proc/self/task/<tid>/stat every round).
#include <cuda.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace {
std::atomic<long> g_main_tid{0};
std::atomic<int> g_other{0};
char g_last[256];

void note(const char* path) {
  const long main = g_main_tid.load();
  if (main == 0 || syscall(SYS_gettid) == main) return;
  g_other.fetch_add(1);
  snprintf(g_last, sizeof g_last, "%s", path ? path : "?");
}

mode_t mode_of(int flags, va_list ap) { return (flags & (O_CREAT | O_TMPFILE)) ? mode_t(va_arg(ap, int)) : 0; }
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_of(flags, ap);
  va_end(ap);
  note(path);
  return int(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
}
__attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_of(flags, ap);
  va_end(ap);
  note(path);
  return int(syscall(SYS_openat, AT_FDCWD, path, flags, mode));
}
__attribute__((visibility("default"))) int openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_of(flags, ap);
  va_end(ap);
  note(path);
  return int(syscall(SYS_openat, dirfd, path, flags, mode));
}
__attribute__((visibility("default"))) int openat64(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_of(flags, ap);
  va_end(ap);
  note(path);
  return int(syscall(SYS_openat, dirfd, path, flags, mode));
}
}

int main() {
  g_main_tid.store(syscall(SYS_gettid));
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS || cuCtxCreate(&ctx, nullptr, 0, dev) != CUDA_SUCCESS ||
      cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS)
    return 2;
  g_other.store(0);  // from here on: the program runs, vramtrace's threads only sample
  g_last[0] = 0;
  for (int i = 0; i < 8; ++i) usleep(100000);  // 800 ms: three rounds of the sampler at least
  cuMemFree(p);
  const int n = g_other.load();
  if (n) printf("other-thread opens: %d (last: %s)\n", n, g_last);
  else printf("other-thread opens: 0\n");
  return 0;
}
