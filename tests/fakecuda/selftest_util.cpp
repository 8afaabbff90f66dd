// selftest_util.cpp — the helpers of selftest.h.
#include "selftest.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

extern char **environ;

namespace selftest {

std::atomic<int> g_failures{0};

size_t free_mem() {
  size_t f = 0, t = 0;
  OK(cuMemGetInfo_v2(&f, &t));
  CHECK(t == kTotal);
  return f;
}

void *lib_sym(const char *name) {
  static void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h ? dlsym(h, name) : nullptr;
}

void *proc(const char *name, int version, cuuint64_t flags) {
  void *fn = nullptr;
  CUdriverProcAddressQueryResult st;
  CUresult r = cuGetProcAddress_v2(name, &fn, version, flags, &st);
  if (r != CUDA_SUCCESS || !fn) {
    fprintf(stderr, "FAIL cuGetProcAddress_v2(%s, %d, %llu) = %d\n", name, version,
            static_cast<unsigned long long>(flags), static_cast<int>(r));
    g_failures++;
  }
  return fn;
}

std::string self_path() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = 0;
  return buf;
}

int run_child(const std::vector<std::string> &args, const std::vector<std::string> &env,
              const std::vector<int> &keep) {
  return wait_child(spawn_child(args, env, keep));
}

int wait_child(int pid) {
  if (pid < 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int spawn_child(const std::vector<std::string> &args, const std::vector<std::string> &env,
                const std::vector<int> &keep) {
  std::string exe = self_path();
  std::vector<std::string> argv_s = {exe, "--child"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (auto &a : argv_s) argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  // getenv returns the first match: the extra assignments come before the inherited ones.
  std::vector<std::string> ordered(env.begin(), env.end());
  for (char **e = environ; *e; ++e) ordered.push_back(*e);
  std::vector<char *> envp;
  for (auto &e : ordered) envp.push_back(const_cast<char *>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd : keep) {
    // dup2 onto itself clears close-on-exec in the child (glibc 2.29+ semantics for spawn).
    posix_spawn_file_actions_adddup2(&fa, fd, fd);
  }
  pid_t pid;
  int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

CUmemAllocationProp device_prop(int dev, bool shareable) {
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  if (shareable) prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

}  // namespace selftest
