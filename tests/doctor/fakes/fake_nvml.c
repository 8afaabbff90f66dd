/* A stand-in libnvidia-ml.so.1 with canned answers, configured by environment variables:
 *   FAKENVML_INIT_RESULT   what nvmlInit returns (default 0; 18 = driver/library mismatch)
 *   FAKENVML_DRIVER        nvmlSystemGetDriverVersion (default 580.65.06)
 *   FAKENVML_CUDA_VERSION  nvmlSystemGetCudaDriverVersion (default 13000)
 *   FAKENVML_DEVICES       number of GPUs (default 1)
 *   FAKENVML_TOTAL_BYTES / FAKENVML_USED_BYTES  memory of each GPU (default 80 GiB / 3 GiB)
 *   FAKENVML_PROCESSES     compute processes on GPU 0: "pid:bytes:name;..." where bytes "-" means
 *                          not available (default "4242:2147483648:python3;4343:-:trainer")
 *   FAKENVML_GRAPHICS      graphics processes on GPU 0, same form (default none)
 * Built twice: the current API (_v2/_v3 names, 24-byte process rows) and, with FAKE_NVML_OLD_API,
 * only the original names with 16-byte rows, as drivers before R470 export. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_VALUE_NOT_AVAILABLE (~0ull)
#define PROCS "4242:2147483648:python3;4343:-:trainer" /* FAKENVML_PROCESSES' default */

typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} proc_v1;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gi, ci;
} proc_v2;
typedef struct {
  int index;
} device;

static device devices[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
static int initialised;

struct proc {
  unsigned pid;
  unsigned long long bytes;
  char name[64];
};

static const char *env_or(const char *name, const char *dflt) {
  const char *v = getenv(name);
  return v ? v : dflt;
}

static int device_count(void) {
  int n = atoi(env_or("FAKENVML_DEVICES", "1"));
  return n < 0 ? 0 : n > 8 ? 8 : n;
}

static int parse_procs(const char *spec, struct proc *out, int cap) {
  int n = 0;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *item = strtok_r(buf, ";", &save); item && n < cap; item = strtok_r(NULL, ";", &save)) {
    char *bytes = strchr(item, ':');
    if (!bytes) continue;
    *bytes++ = '\0';
    char *name = strchr(bytes, ':');
    if (name) *name++ = '\0';
    out[n].pid = (unsigned)strtoul(item, NULL, 10);
    out[n].bytes = strcmp(bytes, "-") == 0 ? NVML_VALUE_NOT_AVAILABLE : strtoull(bytes, NULL, 10);
    snprintf(out[n].name, sizeof out[n].name, "%s", name ? name : "");
    ++n;
  }
  return n;
}

static int get_procs(device *d, const char *var, const char *dflt, unsigned *count, void *infos, int v2) {
  if (!initialised) return 1;
  struct proc p[16];
  int n = d->index == 0 ? parse_procs(env_or(var, dflt), p, 16) : 0;
  if (!infos || *count < (unsigned)n) {
    *count = (unsigned)n;
    return n ? 7 /* INSUFFICIENT_SIZE */ : 0;
  }
  for (int i = 0; i < n; ++i) {
    if (v2) {
      proc_v2 *r = (proc_v2 *)infos + i;
      r->pid = p[i].pid;
      r->usedGpuMemory = p[i].bytes;
      r->gi = r->ci = 0xFFFFFFFFu;
    } else {
      proc_v1 *r = (proc_v1 *)infos + i;
      r->pid = p[i].pid;
      r->usedGpuMemory = p[i].bytes;
    }
  }
  *count = (unsigned)n;
  return 0;
}

static int init_impl(void) {
  int r = atoi(env_or("FAKENVML_INIT_RESULT", "0"));
  initialised = r == 0;
  return r;
}
static int count_impl(unsigned *c) {
  if (!initialised) return 1;
  *c = (unsigned)device_count();
  return 0;
}
static int handle_impl(unsigned i, device **d) {
  if (!initialised) return 1;
  if (i >= (unsigned)device_count()) return 2;
  *d = &devices[i];
  return 0;
}

int nvmlShutdown(void) {
  initialised = 0;
  return 0;
}
const char *nvmlErrorString(int r) {
  return r == 18 ? "Driver/library version mismatch" : r == 9 ? "Driver Not Loaded" : "Unknown Error";
}
int nvmlSystemGetDriverVersion(char *buf, unsigned len) {
  snprintf(buf, len, "%s", env_or("FAKENVML_DRIVER", "580.65.06"));
  return 0;
}
int nvmlSystemGetNVMLVersion(char *buf, unsigned len) {
  snprintf(buf, len, "13.%s", env_or("FAKENVML_DRIVER", "580.65.06"));
  return 0;
}
int nvmlDeviceGetName(device *d, char *buf, unsigned len) {
  snprintf(buf, len, "Fake GPU %d 80GB", d->index);
  return 0;
}
int nvmlDeviceGetMemoryInfo(device *d, nvmlMemory_t *m) {
  (void)d;
  m->total = strtoull(env_or("FAKENVML_TOTAL_BYTES", "85899345920"), NULL, 10);
  m->used = strtoull(env_or("FAKENVML_USED_BYTES", "3221225472"), NULL, 10);
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(device *d, int *major, int *minor) {
  (void)d;
  *major = 9;
  *minor = 0;
  return 0;
}
int nvmlSystemGetProcessName(unsigned pid, char *buf, unsigned len) {
  struct proc p[16];
  int n = parse_procs(env_or("FAKENVML_PROCESSES", PROCS), p, 16);
  for (int i = 0; i < n; ++i)
    if (p[i].pid == pid) {
      snprintf(buf, len, "%s", p[i].name);
      return 0;
    }
  n = parse_procs(env_or("FAKENVML_GRAPHICS", ""), p, 16);
  for (int i = 0; i < n; ++i)
    if (p[i].pid == pid) {
      snprintf(buf, len, "%s", p[i].name);
      return 0;
    }
  return 6; /* NOT_FOUND */
}

#ifndef FAKE_NVML_OLD_API
int nvmlInit_v2(void) { return init_impl(); }
int nvmlDeviceGetCount_v2(unsigned *c) { return count_impl(c); }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, device **d) { return handle_impl(i, d); }
int nvmlSystemGetCudaDriverVersion_v2(int *v) {
  *v = atoi(env_or("FAKENVML_CUDA_VERSION", "13000"));
  return 0;
}
int nvmlDeviceGetUUID(device *d, char *buf, unsigned len) {
  snprintf(buf, len, "GPU-fake-%d", d->index);
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(device *d, unsigned *count, proc_v2 *infos) {
  return get_procs(d, "FAKENVML_PROCESSES", PROCS, count, infos, 1);
}
int nvmlDeviceGetGraphicsRunningProcesses_v3(device *d, unsigned *count, proc_v2 *infos) {
  return get_procs(d, "FAKENVML_GRAPHICS", "", count, infos, 1);
}
#else
int nvmlInit(void) { return init_impl(); }
int nvmlDeviceGetCount(unsigned *c) { return count_impl(c); }
int nvmlDeviceGetHandleByIndex(unsigned i, device **d) { return handle_impl(i, d); }
int nvmlSystemGetCudaDriverVersion(int *v) {
  *v = atoi(env_or("FAKENVML_CUDA_VERSION", "13000"));
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses(device *d, unsigned *count, proc_v1 *infos) {
  return get_procs(d, "FAKENVML_PROCESSES", PROCS, count, infos, 0);
}
#endif
