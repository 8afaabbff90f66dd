/* A program using the installed vramtrace query API (include/vramtrace.h), built against an
 * install tree by tests/install/consumer_check.sh: once with CMake (find_package(vramtrace), target
 * vramtrace::api) and once with pkg-config (vramtrace.pc). It prints what the API answers: -1
 * (not tracing) without the preloaded library, 1 under `vramtrace run`. */
#include <stdio.h>
#include <vramtrace.h>

int main(void) {
  printf("active=%d version=%d\n", vramtrace_api_active(), VRAMTRACE_API_VERSION);
  return 0;
}
