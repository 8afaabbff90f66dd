/* A stand-in libnvidia-ml for tests: one device whatever the UUID, and the compute processes
 * listed in FAKENVML_PROCESSES ("pid:bytes,pid:bytes"). */
#include <stdlib.h>
#include <string.h>

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v3_t;

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetHandleByUUID(const char* uuid, void** device) {
  if (!uuid || strncmp(uuid, "GPU-", 4) != 0) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = (void*)0x1;
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned int* count, nvmlProcessInfo_v3_t* infos) {
  const char* spec = getenv("FAKENVML_PROCESSES");
  unsigned int n = 0;
  while (spec && *spec && n < *count) {
    char* end;
    infos[n].pid = (unsigned int)strtoul(spec, &end, 10);
    infos[n].usedGpuMemory = *end == ':' ? strtoull(end + 1, &end, 10) : 0;
    infos[n].gpuInstanceId = infos[n].computeInstanceId = 0xffffffffu;
    ++n;
    spec = *end == ',' ? end + 1 : end + strlen(end);
  }
  *count = n;
  return 0;
}
