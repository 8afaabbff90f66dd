// A C++ library a C program dlopens with RTLD_LOCAL, as Python opens an extension module
// (PyTorch's among them): which _Unwind_RaiseException its exceptions go through, and one thrown.
#include <dlfcn.h>
#include <unwind.h>

#include <stdexcept>

extern "C" const char* thrower_unwinder() {
  Dl_info info{};
  // The address as this library's relocations resolved it: what libstdc++'s throw calls too.
  void* fn = reinterpret_cast<void*>(&_Unwind_RaiseException);
  return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

extern "C" int thrower_throw(int value) {
  try {
    throw std::runtime_error("thrown");
  } catch (const std::exception&) {
    return value;
  }
  return -1;
}
