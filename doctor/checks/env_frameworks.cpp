// JAX/XLA, TensorFlow, CuPy and NCCL settings that decide how much GPU memory a framework takes
// and when: preallocation, pool caps, allocator choice, communication buffers.
#include <cctype>

#include "byte_size.h"
#include "../util.h"
#include "env.h"

namespace vt::doctor {

namespace {

EnvExplanation bad_value(const std::string& value, const std::string& expected) {
  EnvExplanation e;
  e.verdict = Verdict::warning;
  e.meaning = "'" + value + "' is not a valid value";
  e.advice = "use " + expected;
  return e;
}

}  // namespace

bool parse_env_bytes(const std::string& text, uint64_t* out) {
  std::string t = trim(text);
  size_t i = 0;
  while (i < t.size() && isdigit(static_cast<unsigned char>(t[i]))) ++i;
  if (i == 0 || i > 18) return false;
  uint64_t v = std::stoull(t.substr(0, i));
  std::string suffix = lower(t.substr(i));
  int shift = 0;
  if (suffix.empty() || suffix == "b")
    shift = 0;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib")
    shift = 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib")
    shift = 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib")
    shift = 30;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib")
    shift = 40;
  else
    return false;
  if (shift && v > (~0ull >> shift)) return false;
  *out = v << shift;
  return true;
}

EnvExplanation explain_xla_preallocate(const std::string& value) {
  EnvExplanation e;
  std::string v = lower(value);
  if (v == "false" || v == "0") {
    e.meaning =
        "JAX allocates GPU memory as arrays need it instead of reserving 75% at start-up "
        "(less memory held, more fragmentation, out-of-memory possible later in a run)";
  } else if (v == "true" || v == "1") {
    e.meaning =
        "JAX reserves XLA_PYTHON_CLIENT_MEM_FRACTION of the GPU (default 75%) at its first GPU use: "
        "nvidia-smi and traces show that one block, not the arrays inside it";
  } else {
    return bad_value(value, "true or false");
  }
  return e;
}

EnvExplanation explain_xla_mem_fraction(const std::string& value) {
  auto f = parse_double(trim(value));
  if (!f || *f <= 0 || *f > 1) return bad_value(value, "a fraction between 0 and 1, e.g. .50");
  EnvExplanation e;
  e.meaning = "JAX's pool is " + std::to_string(int(*f * 100 + 0.5)) +
              "% of the GPU's memory (reserved up front unless XLA_PYTHON_CLIENT_PREALLOCATE=false; a cap either way)";
  return e;
}

EnvExplanation explain_xla_allocator(const std::string& value) {
  EnvExplanation e;
  if (value == "platform") {
    e.meaning =
        "JAX allocates and frees exactly what each array needs, with no pool: slow, but memory use is exact "
        "(a debugging setting)";
  } else if (value == "bfc" || value == "default") {
    e.meaning = "JAX uses its best-fit-with-coalescing pool (the default)";
  } else if (value == "cuda_async") {
    e.meaning = "JAX uses the driver's stream-ordered pool (cuMemAllocAsync in traces)";
  } else {
    return bad_value(value, "platform, bfc or cuda_async");
  }
  return e;
}

EnvExplanation explain_tf_allow_growth(const std::string& value) {
  EnvExplanation e;
  std::string v = lower(value);
  if (v == "true") {
    e.meaning = "TensorFlow grows its GPU pool as needed instead of mapping nearly all GPU memory at start-up";
  } else if (v == "false") {
    e.meaning = "TensorFlow maps nearly all GPU memory at start-up (the default)";
  } else {
    return bad_value(value, "true or false (TensorFlow rejects anything else)");
  }
  return e;
}

EnvExplanation explain_tf_gpu_allocator(const std::string& value) {
  EnvExplanation e;
  if (value == "cuda_malloc_async")
    e.meaning = "TensorFlow uses the driver's stream-ordered pool (cuMemAllocAsync in traces)";
  else
    return bad_value(value, "cuda_malloc_async, or unset for TensorFlow's BFC pool");
  return e;
}

EnvExplanation explain_cupy_limit(const std::string& value) {
  EnvExplanation e;
  std::string v = trim(value);
  if (!v.empty() && v.back() == '%') {
    auto pct = parse_double(v.substr(0, v.size() - 1));
    if (!pct || *pct <= 0 || *pct > 100) return bad_value(value, "a byte count or a percentage such as 50%");
    e.meaning =
        "CuPy's memory pool stops growing at " + v + " of the GPU: allocations beyond it raise OutOfMemoryError";
    return e;
  }
  uint64_t bytes = 0;
  if (!parse_env_bytes(v, &bytes)) return bad_value(value, "a byte count or a percentage such as 50%");
  e.meaning =
      "CuPy's memory pool stops growing at " + format_bytes(bytes) + ": allocations beyond it raise OutOfMemoryError";
  e.data = {{"bytes", bytes}};
  return e;
}

EnvExplanation explain_nccl_buffsize(const std::string& value) {
  uint64_t bytes = 0;
  if (!parse_env_bytes(value, &bytes) || bytes == 0) return bad_value(value, "a byte count (default 4194304 = 4 MiB)");
  EnvExplanation e;
  e.meaning = "NCCL's buffer per channel and peer is " + format_bytes(bytes) +
              " (default 4 MiB): every communicator "
              "holds a multiple of it on each GPU";
  e.data = {{"bytes", bytes}};
  return e;
}

}  // namespace vt::doctor
