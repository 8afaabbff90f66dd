// libcupti_local_client.so: a CUPTI session from a library linked with its own libcupti (see
// cupti_local_client.cpp). client_session() subscribes, registers, enables kernels and flushes.
#include <cupti.h>

#include <atomic>
#include <cstdio>

extern "C" const char* fakecupti_log();

namespace {
std::atomic<int> g_records{0};
alignas(8) uint8_t g_buffer[1 << 16];
void CUPTIAPI request(uint8_t** b, size_t* size, size_t* max) {
  *b = g_buffer;
  *size = sizeof g_buffer;
  *max = 0;
}
void CUPTIAPI done(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) g_records++;
}
void CUPTIAPI callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
}  // namespace

extern "C" __attribute__((visibility("default"))) int client_session() {
  CUpti_SubscriberHandle h = nullptr;
  CUptiResult r = cuptiSubscribe(&h, callback, nullptr);
  printf("client_subscribe=%d\n", int(r));
  printf("client_register=%d\n", int(cuptiActivityRegisterCallbacks(request, done)));
  printf("client_enable=%d\n", int(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)));
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  printf("client_records=%d\n", g_records.load());
  return r == CUPTI_SUCCESS ? 0 : 1;
}

extern "C" __attribute__((visibility("default"))) const char* client_log() { return fakecupti_log(); }
