// config.h — the simulator's knobs, read once from FAKECUDA_* environment variables.
#pragma once

#include <cstdint>
#include <string>

namespace fc {

struct Config {
  int devices = 1;                            // FAKECUDA_DEVICES (0..64; 0 = cuInit fails NO_DEVICE)
  uint64_t total_bytes = 16ull << 30;         // FAKECUDA_TOTAL_BYTES, capacity of each device
  uint64_t foreign_bytes = 0;                 // FAKECUDA_FOREIGN_BYTES, held by "other processes"
  int driver_version = 13000;                 // FAKECUDA_DRIVER_VERSION
  uint64_t context_bytes = 512ull << 20;      // FAKECUDA_CONTEXT_BYTES, what a context costs its device
  uint64_t module_bytes = 2ull << 20;         // FAKECUDA_MODULE_BYTES, what a loaded module costs
  bool lazy_loading = true;                   // CUDA_MODULE_LOADING (the real driver's variable)
  std::string log_path;                       // FAKECUDA_LOG, cuGetProcAddress request log
  std::string device_name = "NVIDIA H200 (vramtrace simulated)";  // FAKECUDA_DEVICE_NAME
  bool signal_safe = false;                   // FAKECUDA_SIGNAL_SAFE=1 (see DriverMutex)
  bool share_nothing = false;                 // FAKECUDA_SHARE_NOTHING=1 (see api_pool.cpp)
  std::string raise_in;                       // FAKECUDA_RAISE=<entry point>:<every>
  long raise_every = 0;
};

// Parsed on first use and never freed: entry points can still run from other
// libraries' destructors after ours would have run.
const Config &config();

// A whole number with an optional suffix: K/M/G/T and KiB/MiB/GiB/TiB are powers of 1024,
// KB/MB/GB/TB powers of 1000; case-insensitive ("16G", "16GiB", "1500MB", "12345").
// Fractions, signs, spaces and overflow are rejected.
bool parse_bytes(const char *text, uint64_t &out);

}  // namespace fc
