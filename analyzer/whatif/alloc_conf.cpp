// See alloc_conf.h. Follows c10/cuda/CUDAAllocatorConfig.cpp of PyTorch 2.6 (lexArgs, parseArgs
// and its parse* helpers), which later versions moved to c10/core/AllocatorConfig.cpp unchanged.
#include "alloc_conf.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace vt::analyzer {

namespace {

constexpr size_t kMB = 1ull << 20;
constexpr size_t kLargeBufferMB = 20;  // kLargeBuffer / 1 MiB: the smallest max_split_size_mb

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }
size_t floor_log2(uint64_t v) { return 63 - size_t(__builtin_clzll(v)); }

// PyTorch's lexArgs: ',' ':' '[' ']' are tokens of their own, spaces are dropped.
std::vector<std::string> lex(const std::string& s) {
  std::vector<std::string> out;
  std::string buf;
  for (char c : s) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!buf.empty()) out.push_back(buf), buf.clear();
      out.emplace_back(1, c);
    } else if (c != ' ') {
      buf.push_back(c);
    }
  }
  if (!buf.empty()) out.push_back(buf);
  return out;
}

class Parser {
 public:
  Parser(const std::string& text, AllocConf* out, std::string* error) : t_(lex(text)), c_(*out), err_(*error) {}

  bool run() {
    for (i_ = 0; i_ < t_.size(); i_++) {
      const std::string key = t_[i_];
      bool ok;
      if (key == "max_split_size_mb") ok = megabytes(key, &c_.max_split_size);
      else if (key == "max_non_split_rounding_mb") ok = megabytes(key, &c_.max_non_split_rounding);
      else if (key == "garbage_collection_threshold") ok = threshold();
      else if (key == "roundup_power2_divisions") ok = divisions();
      else if (key == "expandable_segments") ok = boolean(key, &c_.expandable_segments);
      else if (key == "backend") ok = backend();
      else if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
               key == "pinned_use_background_threads") {
        bool ignored;
        ok = boolean(key, &ignored);
      } else if (key == "pinned_num_register_threads") {
        uint64_t v;
        ok = colon() && number(&v) && (power_of_two(v) || fail("Number of register threads has to be power of 2"));
      } else {
        return fail("Unrecognized CachingAllocator option: " + key);
      }
      if (!ok) return false;
      if (i_ + 1 < t_.size() && !token(","))
        return fail("Error parsing CachingAllocator settings, expected ',' after " + key + "'s value");
    }
    return true;
  }

 private:
  bool fail(const std::string& why) {
    err_ = why;
    return false;
  }
  // The next token is `s` (consumed).
  bool token(const char* s) {
    if (i_ + 1 < t_.size() && t_[i_ + 1] == s) {
      ++i_;
      return true;
    }
    return false;
  }
  bool colon() { return token(":") || fail("Error parsing CachingAllocator settings, expected ':' after " + t_[i_]); }
  bool next_value(std::string* v) {
    if (i_ + 1 >= t_.size()) return fail("Error, expecting a value after " + t_[i_ - 1]);
    *v = t_[++i_];
    return true;
  }
  // A non-negative integer as PyTorch's stoi reads it: leading digits, the rest ignored ("64MB" is 64).
  bool number(uint64_t* out) {
    std::string v;
    if (!next_value(&v)) return false;
    // (stoi: a sign is taken, and PyTorch then keeps the int in a size_t: "-1" is 2^64 - 1)
    char* end = nullptr;
    errno = 0;
    long long n = strtoll(v.c_str(), &end, 10);
    if (v.empty() || end == v.c_str() || errno || n < INT32_MIN || n > INT32_MAX) return fail("'" + v + "' is not a number");
    *out = uint64_t(n);
    return true;
  }
  bool megabytes(const std::string& key, size_t* out) {
    uint64_t v;
    if (!colon() || !number(&v)) return false;
    if (v <= kLargeBufferMB) return fail("CachingAllocator option " + key + " too small, must be > 20");
    *out = v > SIZE_MAX / kMB ? SIZE_MAX / kMB * kMB : size_t(v) * kMB;
    return true;
  }
  bool threshold() {
    std::string v;
    if (!colon() || !next_value(&v)) return false;
    char* end = nullptr;
    double d = strtod(v.c_str(), &end);  // (stod: what follows the number is ignored)
    if (end == v.c_str()) return fail("'" + v + "' is not a number");
    if (!(d > 0)) return fail("garbage_collect_threshold too small, set it 0.0~1.0");
    if (!(d < 1.0)) return fail("garbage_collect_threshold too big, set it 0.0~1.0");
    c_.garbage_collection_threshold = d;
    return true;
  }
  bool boolean(const std::string& key, bool* out) {
    std::string v;
    if (!colon() || !next_value(&v)) return false;
    if (v != "True" && v != "False") return fail("Expected a single True/False argument for " + key);
    *out = v == "True";
    return true;
  }
  bool backend() {
    std::string v;
    if (!colon() || !next_value(&v)) return false;
    if (v != "native" && v != "cudaMallocAsync") return fail("Unknown allocator backend, options are native and cudaMallocAsync");
    c_.cuda_malloc_async = v == "cudaMallocAsync";
    return true;
  }
  // "roundup_power2_divisions:4" (every interval) or "[256:1,512:2,>:8]" (interval MiB: divisions).
  bool divisions() {
    if (!colon()) return false;
    if (!token("[")) {
      uint64_t v;
      if (!number(&v)) return false;
      if (!power_of_two(v)) return fail("For roundups, the divisons has to be power of 2");  // (0 too)
      c_.roundup_divisions.fill(v);
      return true;
    }
    bool first = true;
    size_t last = 0;
    while (!token("]")) {
      std::string interval;
      if (!next_value(&interval)) return false;
      uint64_t v;
      if (!colon() || !number(&v)) return false;
      if (v != 0 && !power_of_two(v)) return fail("For roundups, the divisons has to be power of 2 or 0 to disable roundup");
      if (interval == ">") {
        for (size_t k = last; k < AllocConf::kIntervals; k++) c_.roundup_divisions[k] = v;
      } else {
        char* end = nullptr;
        unsigned long long mb = strtoull(interval.c_str(), &end, 10);
        if (interval.empty() || *end || !power_of_two(mb)) return fail("For roundups, the intervals have to be power of 2");
        size_t index = std::min(floor_log2(mb), AllocConf::kIntervals - 1);
        if (first) {
          for (size_t k = 0; k < index; k++) c_.roundup_divisions[k] = v;
          first = false;
        }
        c_.roundup_divisions[index] = v;
        last = index;
      }
      if (i_ + 1 < t_.size() && t_[i_ + 1] != "]" && !token(","))
        return fail("Error parsing roundup_power2_divisions, expected ','");
      if (i_ + 1 >= t_.size()) return fail("Error parsing roundup_power2_divisions, expected ']'");
    }
    return true;
  }

  std::vector<std::string> t_;
  AllocConf& c_;
  std::string& err_;
  size_t i_ = 0;
};

}  // namespace

size_t AllocConf::divisions_for(size_t size) const {
  long index = size ? long(floor_log2(size)) - 20 : 0;  // interval 0 starts at 1 MiB
  index = std::max(0L, std::min(index, long(kIntervals) - 1));
  return roundup_divisions[size_t(index)];
}

bool AllocConf::native_options() const {
  if (expandable_segments || max_split_size != kNoLimit || garbage_collection_threshold > 0) return true;
  for (size_t d : roundup_divisions)
    if (d) return true;
  return false;
}

bool parse_alloc_conf(const std::string& text, AllocConf* out, std::string* error) {
  AllocConf c;
  c.text = text;
  std::string err;
  if (!Parser(text, &c, &err).run()) {
    *error = "PYTORCH_CUDA_ALLOC_CONF '" + text + "': " + err;
    return false;
  }
  *out = c;
  return true;
}

std::string alloc_conf_label(const AllocConf& c) { return c.text.empty() ? "PyTorch's defaults" : c.text; }

}  // namespace vt::analyzer
