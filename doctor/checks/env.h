// Internal to the environment check: what one environment variable's value means for GPU
// memory. Explainers are split by who reads the variable (env_pytorch.cpp, env_frameworks.cpp,
// env.cpp for CUDA itself, the loader and vramtrace).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../report.h"

namespace vt::doctor {

struct EnvExplanation {
  Verdict verdict = Verdict::info;
  std::string meaning;               // one sentence: what this value does to memory
  std::string advice;                // for warnings
  std::vector<std::string> details;  // per-setting lines (allocator options)
  nlohmann::json data = nlohmann::json::object();
};

using EnvExplainer = EnvExplanation (*)(const std::string& value);

EnvExplanation explain_pytorch_alloc_conf(const std::string& value);
EnvExplanation explain_pytorch_no_caching(const std::string& value);

EnvExplanation explain_xla_preallocate(const std::string& value);
EnvExplanation explain_xla_mem_fraction(const std::string& value);
EnvExplanation explain_xla_allocator(const std::string& value);
EnvExplanation explain_tf_allow_growth(const std::string& value);
EnvExplanation explain_tf_gpu_allocator(const std::string& value);
EnvExplanation explain_cupy_limit(const std::string& value);
EnvExplanation explain_nccl_buffsize(const std::string& value);

// A size as frameworks write it: a byte count with an optional K/M/G/T suffix (powers of 1024).
bool parse_env_bytes(const std::string& text, uint64_t* out);

}  // namespace vt::doctor
