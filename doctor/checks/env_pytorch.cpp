// PyTorch's allocator settings: PYTORCH_CUDA_ALLOC_CONF (and its newer name PYTORCH_ALLOC_CONF),
// a comma list of key:value options for the caching allocator, and
// PYTORCH_NO_CUDA_MEMORY_CACHING. PyTorch rejects unknown keys with "Unrecognized
// CachingAllocator option" at the first CUDA allocation, so typos are worth a warning.
#include <cmath>

#include "../util.h"
#include "env.h"

namespace vt::doctor {

namespace {

// Splits on commas outside brackets: roundup_power2_divisions:[256:1,512:2,>:4] is one option.
std::vector<std::string> split_options(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(trim(cur));
  return out;
}

bool is_bool(const std::string& v) {
  return v == "True" || v == "False" || v == "true" || v == "false" || v == "1" || v == "0";
}
bool truthy(const std::string& v) { return v == "True" || v == "true" || v == "1"; }

// explain_option's two outcomes: an explanation, or a complaint about the option.
bool good(std::string* line, std::string text) {
  *line = std::move(text);
  return true;
}
bool bad(std::string* line, std::string text) {
  *line = std::move(text);
  return false;
}

// One option: its meaning, or a complaint. Returns false for a bad option.
bool explain_option(const std::string& key, const std::string& value, std::string* line) {
  if (key == "expandable_segments") {
    if (!is_bool(value)) return bad(line, "expandable_segments wants True or False, not '" + value + "'");
    return good(line, truthy(value)
                          ? "expandable_segments: segments grow in place through the driver's virtual memory API "
                            "(cuMemCreate/cuMemMap in traces) instead of new cudaMalloc blocks: much less fragmentation"
                          : "expandable_segments off: each segment is one cudaMalloc (the default)");
  }
  if (key == "backend") {
    if (value == "cudaMallocAsync") {
      return good(line,
                  "backend:cudaMallocAsync: PyTorch's caching allocator is replaced by the driver's "
                  "stream-ordered pool (cuMemAllocAsync/cuMemPool* in traces); the native options here are ignored");
    }
    if (value == "native") return good(line, "backend:native: PyTorch's own caching allocator (the default)");
    return bad(line, "backend must be native or cudaMallocAsync, not '" + value + "'");
  }
  if (key == "max_split_size_mb") {
    auto v = parse_int(value);
    if (!v || *v <= 20) return bad(line, "max_split_size_mb must be a whole number above 20, not '" + value + "'");
    return good(line, "max_split_size_mb:" + value + ": cached blocks larger than " + value +
                          " MiB are never split, so big free blocks stay whole for big tensors (less fragmentation, "
                          "sometimes more reserved memory)");
  }
  if (key == "garbage_collection_threshold") {
    auto v = parse_double(value);
    if (!v || *v <= 0 || *v >= 1)
      return bad(line, "garbage_collection_threshold must be between 0 and 1, not '" + value + "'");
    return good(line, "garbage_collection_threshold:" + value + ": once reserved memory passes " +
                          std::to_string(int(std::lround(*v * 100))) +
                          "% of the allowed memory, unused cached blocks are freed "
                          "(before an allocation would fail)");
  }
  if (key == "roundup_power2_divisions") {
    return good(line,
                "roundup_power2_divisions:" + value +
                    ": request sizes are rounded up to one of that many steps between "
                    "powers of two, so freed blocks fit later requests better (at the cost of some slack per tensor)");
  }
  if (key == "release_lock_on_cudamalloc") {
    if (!is_bool(value)) return bad(line, "release_lock_on_cudamalloc wants True or False, not '" + value + "'");
    return good(line,
                "release_lock_on_cudamalloc: other threads may allocate while one waits in cudaMalloc (speed only)");
  }
  if (key == "pinned_use_cuda_host_register" || key == "pinned_num_register_threads" ||
      key == "pinned_use_background_threads" || key == "pinned_reserve_segment_size_mb") {
    return good(line, key + ":" + value +
                          ": pinned host memory settings (with cuda_host_register, pinned memory is malloc'ed "
                          "and registered: cuMemHostRegister in traces instead of cuMemHostAlloc)");
  }
  if (key == "per_process_memory_fraction") {
    auto v = parse_double(value);
    if (!v || *v <= 0 || *v > 1) return bad(line, "per_process_memory_fraction must be in (0, 1], not '" + value + "'");
    return good(line, "per_process_memory_fraction:" + value +
                          ": allocations beyond that share of the GPU fail with "
                          "an out-of-memory error even when memory is free");
  }
  return bad(line, "unknown option '" + key +
                       "': PyTorch versions that do not know it raise \"Unrecognized "
                       "CachingAllocator option\" at the first CUDA allocation");
}

}  // namespace

EnvExplanation explain_pytorch_alloc_conf(const std::string& value) {
  EnvExplanation e;
  e.meaning = "options of PyTorch's CUDA caching allocator:";
  nlohmann::json options = nlohmann::json::object();
  bool bad = false, async_backend = false, expandable = false, native_only = false;
  for (const std::string& opt : split_options(value)) {
    if (opt.empty()) continue;
    size_t colon = opt.find(':');
    std::string key = trim(opt.substr(0, colon));
    std::string val = colon == std::string::npos ? "" : trim(opt.substr(colon + 1));
    std::string line;
    bool good = explain_option(key, val, &line);
    e.details.push_back(good ? line : "not valid: " + line);
    options[key] = val;
    bad |= !good;
    if (key == "backend" && val == "cudaMallocAsync") async_backend = true;
    if (key == "expandable_segments" && truthy(val)) expandable = true;
    if (key == "max_split_size_mb" || key == "garbage_collection_threshold" || key == "roundup_power2_divisions")
      native_only = true;
  }
  e.data = {{"options", options}};
  if (bad) {
    e.verdict = Verdict::warning;
    e.advice =
        "fix the options marked above; the valid ones are documented under \"Memory management\" in "
        "PyTorch's CUDA semantics notes";
  } else if (async_backend && (expandable || native_only)) {
    e.verdict = Verdict::warning;
    e.advice =
        "with backend:cudaMallocAsync the native allocator's options (expandable_segments, max_split_size_mb, "
        "garbage_collection_threshold, roundup_power2_divisions) have no effect: drop one or the other";
  }
  return e;
}

EnvExplanation explain_pytorch_no_caching(const std::string& value) {
  EnvExplanation e;
  if (value == "0" || value.empty()) {
    e.meaning = "set to '" + value +
                "': recent PyTorch leaves caching on; older versions turn it off whenever the "
                "variable exists";
    return e;
  }
  e.verdict = Verdict::warning;
  e.meaning =
      "PyTorch's caching allocator is off: every tensor gets its own cudaMalloc and cudaFree (exact "
      "per-tensor traces, but much slower and more fragmentation)";
  e.advice = "a debugging setting: unset it for normal runs";
  return e;
}

}  // namespace vt::doctor
