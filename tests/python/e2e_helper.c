/* Native helpers for e2e_workload.py: an allocation from a plain C thread (no Python thread
 * state), and an allocation made while holding a mutex that a GIL-holding thread waits for
 * (the deadlock probe: a hook that took the GIL would hang here). Links the driver (-lcuda). */
#include <cuda.h>
#include <pthread.h>
#include <unistd.h>

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void* thread_alloc(void* arg) {
  CUdeviceptr p;
  CUcontext ctx = (CUcontext)arg;
  cuCtxSetCurrent(ctx);
  cuMemAlloc(&p, (size_t)7 << 20);
  return 0;
}

int c_thread_alloc(void) {
  CUcontext ctx;
  pthread_t t;
  cuCtxGetCurrent(&ctx);
  if (pthread_create(&t, 0, thread_alloc, ctx)) return -1;
  pthread_join(t, 0);
  return 0;
}

/* Called through ctypes.CDLL (GIL released): holds the mutex across an allocation. */
int locked_alloc(size_t bytes) {
  CUdeviceptr p;
  pthread_mutex_lock(&g_mu);
  usleep(100000);
  CUresult r = cuMemAlloc(&p, bytes);
  pthread_mutex_unlock(&g_mu);
  return (int)r;
}

/* Called through ctypes.PyDLL (GIL held): waits for the mutex. */
int wait_for_lock(void) {
  pthread_mutex_lock(&g_mu);
  pthread_mutex_unlock(&g_mu);
  return 0;
}
