// Environment variables that change GPU memory behaviour: one line for each one present, saying
// what its value does to memory (and a warning for values that break or disable something).
// The table below is the list of variables; framework-specific meanings live in
// env_pytorch.cpp and env_frameworks.cpp.
#include <algorithm>
#include <cctype>

#include "../util.h"
#include "checks.h"
#include "env.h"

namespace vt::doctor {

namespace {

EnvExplanation explain_visible_devices(const std::string& value) {
  EnvExplanation e;
  std::string v = trim(value);
  if (v.empty() || v == "-1" || v == "none" || v == "NoDevFiles") {
    e.verdict = Verdict::warning;
    e.meaning = "hides every GPU: cuInit fails with CUDA_ERROR_NO_DEVICE";
    e.advice = "unset it, or list the GPUs to use (0,1 or GPU-<uuid>)";
    return e;
  }
  // CUDA stops at the first entry it cannot parse and ignores the rest.
  std::vector<std::string> entries = split(v, ',');
  std::vector<std::string> used;
  for (const std::string& raw : entries) {
    std::string ent = trim(raw);
    bool number = !ent.empty() &&
                  std::all_of(ent.begin(), ent.end(), [](char c) { return isdigit(static_cast<unsigned char>(c)); });
    if (!number && ent.rfind("GPU-", 0) != 0 && ent.rfind("MIG-", 0) != 0) {
      e.verdict = Verdict::warning;
      e.advice = "'" + ent + "' is not a GPU index, GPU-<uuid> or MIG-<uuid>; CUDA ignores it and everything after it";
      break;
    }
    used.push_back(ent);
  }
  e.meaning = std::to_string(used.size()) + (used.size() == 1 ? " GPU" : " GPUs") + " visible (" + join(used, ",") +
              "), renumbered from 0: device 0 in traces is GPU " + (used.empty() ? "?" : used[0]) + " of nvidia-smi";
  e.data = {{"visible", used}};
  return e;
}

EnvExplanation explain_device_order(const std::string& value) {
  EnvExplanation e;
  if (value == "PCI_BUS_ID")
    e.meaning = "CUDA numbers GPUs in PCI order, as nvidia-smi does";
  else if (value == "FASTEST_FIRST")
    e.meaning = "CUDA numbers the fastest GPU first (the default); nvidia-smi's numbers may differ";
  else {
    e.verdict = Verdict::warning;
    e.meaning = "'" + value + "' is not a valid order";
    e.advice = "use PCI_BUS_ID or FASTEST_FIRST";
  }
  return e;
}

EnvExplanation explain_module_loading(const std::string& value) {
  EnvExplanation e;
  if (value == "LAZY") {
    e.meaning = "kernels are loaded on first launch (the default since CUDA 12.2): less memory per context";
  } else if (value == "EAGER") {
    e.meaning =
        "every kernel of every loaded library is loaded when the context is created: tens to hundreds of "
        "MiB more per context for large libraries (cuBLAS, cuDNN)";
  } else {
    e.verdict = Verdict::warning;
    e.meaning = "'" + value + "' is not a valid mode";
    e.advice = "use LAZY or EAGER";
  }
  return e;
}

EnvExplanation explain_max_connections(const std::string& value) {
  EnvExplanation e;
  auto n = parse_int(trim(value));
  if (!n || *n < 1 || *n > 32) {
    e.verdict = Verdict::warning;
    e.meaning = "'" + value + "' is outside 1..32";
    e.advice = "use a number from 1 to 32 (default 8)";
    return e;
  }
  e.meaning = std::to_string(*n) +
              " hardware work queues per device (default 8); each takes a little device memory, "
              "and 1 serialises kernels across streams (Megatron sets it for overlap ordering)";
  return e;
}

EnvExplanation explain_ld_preload(const std::string& value) {
  EnvExplanation e;
  std::vector<std::string> others, harmless, missing;
  bool ours = false;
  for (const std::string& raw : split(value, value.find(':') != std::string::npos ? ':' : ' ')) {
    std::string lib = trim(raw);
    if (lib.empty()) continue;
    std::string name = base_name(lib);
    // The loader prints an error for a missing entry in every program it starts.
    if (lib.find('/') != std::string::npos && !is_file(lib)) missing.push_back(lib);
    if (name.find("vramtrace") != std::string::npos) ours = true;
    // Host allocators change no GPU memory and do not wrap dlsym.
    else if (name.find("jemalloc") != std::string::npos || name.find("tcmalloc") != std::string::npos ||
             name.find("mimalloc") != std::string::npos)
      harmless.push_back(lib);
    else
      others.push_back(lib);
  }
  std::vector<std::string> parts;
  if (ours) parts.push_back("libvramtrace.so is preloaded: programs started from here are traced");
  if (!harmless.empty())
    parts.push_back("host memory allocator " + join(harmless, ", ") + " (no effect on GPU memory)");
  if (!others.empty()) {
    parts.push_back("another preloaded tool: " + join(others, ", "));
    e.verdict = Verdict::warning;
    e.advice =
        "a library that wraps dlsym or CUDA calls can hide allocations from vramtrace or the other way "
        "round; trace without it if events look missing";
  }
  if (!missing.empty()) {
    parts.push_back("missing: " + join(missing, ", "));
    e.verdict = Verdict::warning;
    e.advice = (e.advice.empty() ? "" : e.advice + "; ") +
               "remove the missing entries (every program prints \"cannot be preloaded\" for them)";
  }
  e.meaning = join(parts, "; ");
  e.data = {{"vramtrace", ours}, {"others", others}, {"allocators", harmless}, {"missing", missing}};
  return e;
}

EnvExplanation explain_injection(const std::string& value) {
  EnvExplanation e;
  e.verdict = Verdict::warning;
  e.meaning =
      "the driver loads " + value + " into every CUDA process at cuInit (a profiler such as Nsight, or a CUPTI tool)";
  e.advice =
      "its own buffers show up as GPU memory and in traces, and it slows programs down: unset it unless you "
      "are profiling";
  return e;
}

EnvExplanation explain_vramtrace_disable(const std::string& value) {
  EnvExplanation e;
  if (value == "1") {
    e.verdict = Verdict::warning;
    e.meaning = "vramtrace loads but records nothing";
    e.advice = "unset VRAMTRACE_DISABLE to trace";
  } else {
    e.meaning = "has no effect (only 1 disables tracing)";
  }
  return e;
}

EnvExplanation explain_vramtrace_sink(const std::string& value) {
  EnvExplanation e;
  if (value == "null") {
    e.verdict = Verdict::warning;
    e.meaning = "vramtrace hooks every call but writes no trace (for measuring its overhead)";
    e.advice = "unset VRAMTRACE_SINK to get trace files";
  } else {
    e.meaning = "trace sink '" + value + "'";
  }
  return e;
}

EnvExplanation explain_vramtrace_output(const std::string& value) {
  EnvExplanation e;
  e.meaning = "traces of preloaded programs go to " + value;
  return e;
}

struct Variable {
  const char* name;
  EnvExplainer explain;
};

// Every variable the doctor explains, grouped by who reads it.
const Variable kVariables[] = {
    {"PYTORCH_CUDA_ALLOC_CONF", explain_pytorch_alloc_conf},
    {"PYTORCH_ALLOC_CONF", explain_pytorch_alloc_conf},
    {"PYTORCH_NO_CUDA_MEMORY_CACHING", explain_pytorch_no_caching},
    {"XLA_PYTHON_CLIENT_PREALLOCATE", explain_xla_preallocate},
    {"XLA_PYTHON_CLIENT_MEM_FRACTION", explain_xla_mem_fraction},
    {"XLA_PYTHON_CLIENT_ALLOCATOR", explain_xla_allocator},
    {"TF_FORCE_GPU_ALLOW_GROWTH", explain_tf_allow_growth},
    {"TF_GPU_ALLOCATOR", explain_tf_gpu_allocator},
    {"CUPY_GPU_MEMORY_LIMIT", explain_cupy_limit},
    {"NCCL_BUFFSIZE", explain_nccl_buffsize},
    {"CUDA_VISIBLE_DEVICES", explain_visible_devices},
    {"CUDA_DEVICE_ORDER", explain_device_order},
    {"CUDA_MODULE_LOADING", explain_module_loading},
    {"CUDA_DEVICE_MAX_CONNECTIONS", explain_max_connections},
    {"LD_PRELOAD", explain_ld_preload},
    {"CUDA_INJECTION64_PATH", explain_injection},
    {"VRAMTRACE_DISABLE", explain_vramtrace_disable},
    {"VRAMTRACE_SINK", explain_vramtrace_sink},
    {"VRAMTRACE_OUTPUT", explain_vramtrace_output},
};

}  // namespace

void check_environment(Facts& f, Report& r) {
  int present = 0;
  for (const Variable& v : kVariables) {
    if (!env_set(v.name)) continue;
    ++present;
    std::string value = getenv_str(v.name);
    EnvExplanation e = v.explain(value);
    Check& c = r.add("environment", "environment.variable", e.verdict,
                     std::string(v.name) + "=" + value + ": " + e.meaning, e.advice);
    c.details = e.details;
    c.data = {{"name", v.name}, {"value", value}, {"meaning", e.meaning}, {"details", e.details}, {"parsed", e.data}};
  }
  // The two PyTorch names for the same settings (PYTORCH_ALLOC_CONF is the newer, device-neutral one).
  if (env_set("PYTORCH_CUDA_ALLOC_CONF") && env_set("PYTORCH_ALLOC_CONF") &&
      getenv_str("PYTORCH_CUDA_ALLOC_CONF") != getenv_str("PYTORCH_ALLOC_CONF"))
    r.add("environment", "environment.conflict", Verdict::warning,
          "PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF differ: which one applies depends on the PyTorch version",
          "set only one of them, or both to the same value")
        .data = {{"names", {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"}}};
  if (present == 0)
    r.add("environment", "environment.none", Verdict::ok,
          "no environment variable that changes GPU memory behaviour is set");
}

}  // namespace vt::doctor
