// Opens tests/programs/isolated/plugin.c the ways that put a library out of the hooks' reach, and
// one way that does not, for tests/e2e/isolated_open_test.cpp. The plugin is found only through
// this program's RUNPATH ($ORIGIN/isolated), so an open that succeeds under libvramtrace.so also
// shows its dlopen stub kept the caller's identity. The program's own 1 MiB allocation goes
// through dlsym(handle) (hooked); the plugin then allocates 2 MiB linked and 4 MiB through dlsym.
//   deepbind   dlopen(RTLD_DEEPBIND) before any CUDA call; the plugin allocates (unhooked); then
//              the same plugin by its absolute path (RTLD_LAZY), after the trace opened
//   plain      dlopen(RTLD_NOW), and dlmopen(LM_ID_BASE): the plugin's allocations are hooked
//   namespace  dlmopen(LM_ID_NEWLM), and dlmopen(LM_ID_BASE); the plugin is not called
//   many       RTLD_DEEPBIND under 18 spellings of the plugin's path (the recorder keeps 16)
//   namespace-only  dlmopen(LM_ID_NEWLM), and the plugin makes every CUDA call of the program
//              (the driver's start, a context, 8 MiB): no trace can be written
// Prints "name value" lines; exits 2 on a failed open or call.
#include <cuda.h>
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace {

const char kPlugin[] = "libvt_isolated_plugin.so";

void* open_or_die(void* h, const char* what) {
  if (!h) {
    fprintf(stderr, "isolated_open: %s: %s\n", what, dlerror());
    _exit(2);
  }
  return h;
}

template <typename Fn>
Fn sym(void* lib, const char* name) {
  auto f = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!f) {
    fprintf(stderr, "isolated_open: no %s\n", name);
    _exit(2);
  }
  return f;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    fprintf(stderr, "isolated_open: %s failed (%d)\n", what, int(r));
    _exit(2);
  }
}

// The program's own driver calls, through dlsym(handle): the hooked way.
void own_allocation() {
  void* cuda = open_or_die(dlopen("libcuda.so.1", RTLD_NOW), "libcuda.so.1");
  check(sym<CUresult (*)(unsigned)>(cuda, "cuInit")(0), "cuInit");
  CUdevice dev;
  check(sym<CUresult (*)(CUdevice*, int)>(cuda, "cuDeviceGet")(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(sym<CUresult (*)(CUcontext*, CUdevice)>(cuda, "cuDevicePrimaryCtxRetain")(&ctx, dev), "retain");
  check(sym<CUresult (*)(CUcontext)>(cuda, "cuCtxSetCurrent")(ctx), "cuCtxSetCurrent");
  CUdeviceptr p;
  check(sym<CUresult (*)(CUdeviceptr*, size_t)>(cuda, "cuMemAlloc_v2")(&p, 1 << 20), "cuMemAlloc_v2");
}

void call_plugin(void* plugin) {
  int linked = sym<int (*)(size_t)>(plugin, "plugin_alloc_linked")(2 << 20);
  int via_dlsym = sym<int (*)(size_t)>(plugin, "plugin_alloc_dlsym")(4 << 20);
  printf("plugin_linked %d\nplugin_dlsym %d\n", linked, via_dlsym);
  if (linked != 0 || via_dlsym != 0) _exit(2);
}

std::string plugin_dir() {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) _exit(2);
  exe[n] = '\0';
  std::string s(exe);
  return s.substr(0, s.rfind('/')) + "/isolated";
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "deepbind") {
    void* plugin = open_or_die(dlopen(kPlugin, RTLD_NOW | RTLD_DEEPBIND), "dlopen RTLD_DEEPBIND");
    own_allocation();
    call_plugin(plugin);
    // Once the trace is open: written at once rather than at the open.
    std::string again = plugin_dir() + "/" + kPlugin;
    open_or_die(dlopen(again.c_str(), RTLD_LAZY | RTLD_DEEPBIND), "dlopen RTLD_DEEPBIND (absolute)");
  } else if (mode == "plain") {
    void* plugin = open_or_die(dlopen(kPlugin, RTLD_NOW), "dlopen");
    open_or_die(dlmopen(LM_ID_BASE, kPlugin, RTLD_NOW), "dlmopen LM_ID_BASE");
    own_allocation();
    call_plugin(plugin);
  } else if (mode == "namespace") {
    open_or_die(dlmopen(LM_ID_NEWLM, kPlugin, RTLD_NOW | RTLD_LOCAL), "dlmopen LM_ID_NEWLM");
    open_or_die(dlmopen(LM_ID_BASE, kPlugin, RTLD_NOW), "dlmopen LM_ID_BASE");
    own_allocation();
  } else if (mode == "namespace-only") {
    void* plugin = open_or_die(dlmopen(LM_ID_NEWLM, kPlugin, RTLD_NOW | RTLD_LOCAL), "dlmopen LM_ID_NEWLM");
    int r = sym<int (*)(size_t)>(plugin, "plugin_init_and_alloc")(8 << 20);
    printf("plugin_init_and_alloc %d\n", r);
    if (r != 0) _exit(2);
  } else if (mode == "many") {
    std::string dir = plugin_dir();
    for (int i = 0; i < 18; ++i) {
      std::string path = dir;
      for (int k = 0; k < i; ++k) path += "/.";
      path += std::string("/") + kPlugin;
      open_or_die(dlopen(path.c_str(), RTLD_NOW | RTLD_DEEPBIND), path.c_str());
    }
    own_allocation();
  } else {
    fprintf(stderr, "usage: isolated_open deepbind|plain|namespace|namespace-only|many\n");
    return 2;
  }
  printf("done 1\n");
  return 0;
}
