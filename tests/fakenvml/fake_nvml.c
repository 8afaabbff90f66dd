/* A stand-in libnvidia-ml for tests: one device whatever the UUID, and the compute processes
 * listed in FAKENVML_PROCESSES ("pid:bytes,pid:bytes"), then, as a real GPU's NVML lists the
 * calling process too, a row for this process with what the simulated driver says it holds
 * (tests/fakecuda's fakecuda_process_used_bytes: its contexts, code, allocations and pools)
 * when that driver is loaded here and the process has a context on device 0.
 * FAKENVML_SELF=0 leaves that row out (an NVML that cannot see this process: a container's
 * PID namespace, a MIG instance); FAKENVML_SELF_PID=N lists it under pid N instead (a container
 * whose NVML shows the host's pids). FAKENVML_PROCESSES_FILE names a file to read the list from
 * at every call instead; FAKENVML_INIT_SLEEP_MS makes nvmlInit_v2 take that long.
 * It also answers the five calls real PyTorch makes (tests/realtorch, as libnvidia-ml.so.1): its
 * c10::cuda::DriverAPI asserts that each resolves, and its OutOfMemoryError message lists what
 * nvmlDeviceGetComputeRunningProcesses (v1 rows) says ("this process has X memory in use"). Those
 * find a device by PCI bus id (the simulated driver's 0x18 + ordinal) and list, for device N,
 * FAKENVML_PROCESSES on device 0 only, and this process with what it holds on device N. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v3_t;

/* FAKENVML_INIT_SLEEP_MS: nvmlInit_v2 takes that long (an NVML that hangs in its init). */
int nvmlInit_v2(void) {
  const char* ms = getenv("FAKENVML_INIT_SLEEP_MS");
  if (ms && *ms) usleep((useconds_t)(strtoul(ms, NULL, 10) * 1000));
  return 0;
}
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (!uuid || strncmp(uuid, "GPU-", 4) != 0) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = (void*)0x1;
  return 0;
}
/* This process's bytes on `device` as the simulated driver has them; 0: not listed. */
static unsigned long long self_bytes_on(int device) {
  const char* off = getenv("FAKENVML_SELF");
  if (off && strcmp(off, "0") == 0) return 0;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); /* only a driver already loaded */
  if (!cuda) return 0;
  unsigned long long (*used)(int) = (unsigned long long (*)(int))dlsym(cuda, "fakecuda_process_used_bytes");
  unsigned long long bytes = used ? used(device) : 0;
  dlclose(cuda);
  return bytes;
}
static unsigned long long self_bytes(void) { return self_bytes_on(0); }
/* The pid this process's row carries: FAKENVML_SELF_PID (another namespace's), else its own. */
static unsigned int self_pid(void) {
  const char* pid = getenv("FAKENVML_SELF_PID");
  return pid && *pid ? (unsigned int)strtoul(pid, NULL, 10) : (unsigned int)getpid();
}

/* FAKENVML_PROCESSES_FILE: the list read from that file at every call (a test changes it while
 * the program runs), instead of FAKENVML_PROCESSES. */
static char g_file_spec[4096];
static const char* processes_spec(void) {
  const char* path = getenv("FAKENVML_PROCESSES_FILE");
  FILE* f;
  size_t n;
  if (!path || !*path) return getenv("FAKENVML_PROCESSES");
  f = fopen(path, "re");
  if (!f) return "";
  n = fread(g_file_spec, 1, sizeof g_file_spec - 1, f);
  fclose(f);
  while (n > 0 && (g_file_spec[n - 1] == '\n' || g_file_spec[n - 1] == ' ')) --n;
  g_file_spec[n] = 0;
  return g_file_spec;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned int* count, nvmlProcessInfo_v3_t* infos) {
  const char* spec = processes_spec();
  unsigned int n = 0;
  unsigned long long self;
  while (spec && *spec && n < *count) {
    char* end;
    infos[n].pid = (unsigned int)strtoul(spec, &end, 10);
    infos[n].usedGpuMemory = *end == ':' ? strtoull(end + 1, &end, 10) : 0;
    infos[n].gpuInstanceId = infos[n].computeInstanceId = 0xffffffffu;
    ++n;
    spec = *end == ',' ? end + 1 : end + strlen(end);
  }
  self = self_bytes();
  if (self && n < *count) {
    infos[n].pid = self_pid();
    infos[n].usedGpuMemory = self;
    infos[n].gpuInstanceId = infos[n].computeInstanceId = 0xffffffffu;
    ++n;
  }
  *count = n;
  return 0;
}

/* For `vramtrace top`: one device, FAKENVML_TOTAL_BYTES (default 80 GiB) of which the listed
 * processes use their bytes. */
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;

static unsigned long long listed_bytes(void) {
  nvmlProcessInfo_v3_t infos[64];
  unsigned int n = 64, i;
  unsigned long long sum = 0;
  nvmlDeviceGetComputeRunningProcesses_v3((void*)1, &n, infos);
  for (i = 0; i < n; ++i) sum += infos[i].usedGpuMemory;
  return sum;
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 1;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index != 0) return 2;
  *device = (void*)0x1;
  return 0;
}
int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  strncpy(name, "Fake GPU (fakenvml)", length);
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* m) {
  const char* t = getenv("FAKENVML_TOTAL_BYTES");
  m->total = t ? strtoull(t, 0, 10) : 80ull << 30;
  m->used = listed_bytes();
  m->free = m->total > m->used ? m->total - m->used : 0;
  return 0;
}

/* PyTorch's calls. A handle is 1 + the device's ordinal (device 0's is the 0x1 of the calls above). */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** device) {
  unsigned int domain = 0, number = 0;
  if (!bus || !device || sscanf(bus, "%x:%x", &domain, &number) != 2 || number < 0x18 || number >= 0x18 + 64)
    return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = (void*)(unsigned long)(number - 0x18 + 1);
  return 0;
}
int nvmlDeviceGetNvLinkRemoteDeviceType(void* device, unsigned int link, int* type) {
  (void)device; (void)link; (void)type;
  return 3; /* NVML_ERROR_NOT_SUPPORTED: no NVLink */
}
int nvmlDeviceGetNvLinkRemotePciInfo_v2(void* device, unsigned int link, void* pci) {
  (void)device; (void)link; (void)pci;
  return 3;
}
/* The unversioned (v1) entry point PyTorch 2.6 calls: device 0 lists what the v3 call does;
 * another device, this process's row alone. NVML_ERROR_INSUFFICIENT_SIZE (7) with the count
 * needed when the caller's array is too small, as NVML does. */
int nvmlDeviceGetComputeRunningProcesses(void* device, unsigned int* count, nvmlProcessInfo_v1_t* infos) {
  nvmlProcessInfo_v3_t rows[64];
  unsigned int n = 64, i;
  int ordinal = (int)(unsigned long)device - 1;
  if (!count || ordinal < 0) return 2;
  if (ordinal == 0) {
    nvmlDeviceGetComputeRunningProcesses_v3(device, &n, rows);
  } else {
    unsigned long long self = self_bytes_on(ordinal);
    n = 0;
    if (self) {
      rows[0].pid = self_pid();
      rows[0].usedGpuMemory = self;
      n = 1;
    }
  }
  if (*count < n) {
    *count = n;
    return 7;
  }
  for (i = 0; i < n; ++i) {
    infos[i].pid = rows[i].pid;
    infos[i].usedGpuMemory = rows[i].usedGpuMemory;
  }
  *count = n;
  return 0;
}
