/* A stand-in libcupti: cuptiGetVersion answers FAKE_CUPTI_VERSION (set per build). */
#include <stdint.h>

int cuptiGetVersion(uint32_t *version) {
  *version = FAKE_CUPTI_VERSION;
  return 0;
}
