// config.cpp — parses the FAKECUDA_* environment variables (see config.h). A bad value
// prints one line on stderr naming the variable and the default is used instead.
#include "config.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace fc {
namespace {

bool parse_int(const char *text, long lo, long hi, long &out) {
  if (!text || !*text || isspace(static_cast<unsigned char>(*text))) return false;
  errno = 0;
  char *end = nullptr;
  long v = strtol(text, &end, 10);
  if (errno || *end || v < lo || v > hi) return false;
  out = v;
  return true;
}

void warn(const char *name, const char *value, const char *fallback) {
  fprintf(stderr, "fakecuda: ignoring bad %s=\"%s\", using %s\n", name, value, fallback);
}

Config load() {
  Config c;
  if (const char *v = getenv("FAKECUDA_DEVICES")) {
    long n;
    if (parse_int(v, 0, 64, n)) c.devices = static_cast<int>(n);
    else warn("FAKECUDA_DEVICES", v, "1");
  }
  if (const char *v = getenv("FAKECUDA_TOTAL_BYTES")) {
    uint64_t n;
    if (parse_bytes(v, n) && n > 0) c.total_bytes = n;
    else warn("FAKECUDA_TOTAL_BYTES", v, "16GiB");
  }
  if (const char *v = getenv("FAKECUDA_FOREIGN_BYTES")) {
    uint64_t n;
    if (parse_bytes(v, n)) c.foreign_bytes = n;
    else warn("FAKECUDA_FOREIGN_BYTES", v, "0");
  }
  if (const char *v = getenv("FAKECUDA_DRIVER_VERSION")) {
    long n;
    if (parse_int(v, 1, 1000000, n)) c.driver_version = static_cast<int>(n);
    else warn("FAKECUDA_DRIVER_VERSION", v, "13000");
  }
  if (const char *v = getenv("FAKECUDA_CONTEXT_BYTES")) {
    uint64_t n;
    if (parse_bytes(v, n) && n <= (1ull << 50)) c.context_bytes = n;
    else warn("FAKECUDA_CONTEXT_BYTES", v, "512MiB");
  }
  if (const char *v = getenv("FAKECUDA_MODULE_BYTES")) {
    uint64_t n;
    if (parse_bytes(v, n) && n <= (1ull << 50)) c.module_bytes = n;
    else warn("FAKECUDA_MODULE_BYTES", v, "2MiB");
  }
  if (const char *v = getenv("CUDA_MODULE_LOADING")) {
    c.lazy_loading = strcasecmp(v, "EAGER") != 0;  // like the driver: anything else is the default
  }
  if (const char *v = getenv("FAKECUDA_LOG")) c.log_path = v;
  if (const char *v = getenv("FAKECUDA_DEVICE_NAME"); v && *v) c.device_name = v;
  if (const char *v = getenv("FAKECUDA_SIGNAL_SAFE")) c.signal_safe = strcmp(v, "1") == 0;
  if (const char *v = getenv("FAKECUDA_SHARE_NOTHING")) c.share_nothing = strcmp(v, "1") == 0;
  if (const char *v = getenv("FAKECUDA_RAISE")) {
    const char *colon = strchr(v, ':');
    long n;
    if (colon && colon != v && parse_int(colon + 1, 1, 1000000000, n)) {
      c.raise_in.assign(v, size_t(colon - v));
      c.raise_every = n;
    } else {
      warn("FAKECUDA_RAISE", v, "no signals (use <entry point>:<every n-th call>)");
    }
  }
  return c;
}

}  // namespace

bool parse_bytes(const char *text, uint64_t &out) {
  if (!text || !isdigit(static_cast<unsigned char>(*text))) return false;
  errno = 0;
  char *end = nullptr;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno) return false;
  struct Suffix { const char *s; uint64_t mul; };
  static const Suffix suffixes[] = {
      {"", 1},
      {"K", 1ull << 10}, {"M", 1ull << 20}, {"G", 1ull << 30}, {"T", 1ull << 40},
      {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40},
      {"KB", 1000ull}, {"MB", 1000ull * 1000}, {"GB", 1000ull * 1000 * 1000},
      {"TB", 1000ull * 1000 * 1000 * 1000},
  };
  for (const Suffix &s : suffixes) {
    if (strcasecmp(end, s.s) != 0) continue;
    if (v > UINT64_MAX / s.mul) return false;
    out = v * s.mul;
    return true;
  }
  return false;
}

const Config &config() {
  static const Config *c = new Config(load());
  return *c;
}

}  // namespace fc
