/* Drivers that misbehave, for the doctor's failure paths (one build per mode):
 *   FAKE_CRASH  cuInit dies with SIGSEGV (the doctor must report it, not die with it)
 *   FAKE_STUB   cuInit returns CUDA_ERROR_STUB_LIBRARY, as the toolkit's lib64/stubs/libcuda.so */
#include <signal.h>

int cuDriverGetVersion(int *v) {
  *v = 13000;
  return 0;
}

int cuInit(unsigned flags) {
  (void)flags;
#ifdef FAKE_CRASH
  raise(SIGSEGV);
#endif
  return 34; /* CUDA_ERROR_STUB_LIBRARY */
}

int cuGetErrorName(int err, const char **name) {
  *name = err == 34 ? "CUDA_ERROR_STUB_LIBRARY" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
