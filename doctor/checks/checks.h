// The checks, in the order examine() runs them, and the facts they pass on to each other (the
// driver version for the runtime check, the runtimes for the CUPTI check, ...). Each check adds
// its lines to the report and never throws.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../doctor.h"
#include "../overrides.h"
#include "../isolate.h"
#include "../report.h"

namespace vt::doctor {

struct Toolkit {
  std::string path;            // as found (CUDA_HOME's value, /usr/local/cuda, ...)
  std::string found_by;        // "CUDA_HOME", "CUDA_PATH", "default", "nvcc on PATH", "installed"
  int version = 0;             // 13000
  std::string version_source;  // "version.json", "nvcc --version", "cuda.h"
  bool active = false;         // the one builds use: CUDA_HOME, else CUDA_PATH, else /usr/local/cuda
};

struct Runtime {  // one libcudart file
  std::string path;
  std::vector<std::string> owners;  // "torch", "nvidia/cuda_runtime", "toolkit /usr/local/cuda"
  int version = 0;
  std::string version_source;  // "cudaRuntimeGetVersion" or "file name"
  std::string load_error;      // when the library could not be loaded
};

struct Facts {
  Options options;
  Overrides overrides;

  Isolated nvml;  // probe_nvml's answer
  bool nvml_initialised() const;

  Isolated driver;  // probe_driver's answer
  bool driver_loaded() const;
  bool driver_initialised() const;
  int driver_version() const;  // 0 when unknown
  std::string driver_path() const;
  // The driver is vramtrace's simulated one (tests/fakecuda: its devices say so in their name):
  // driver-API programs run on it, the real CUDA runtime (and so PyTorch, JAX, CuPy) does not.
  bool driver_simulated() const;

  std::vector<Toolkit> toolkits;

  bool python_ran = false;        // the probe script answered
  std::string python_executable;  // sys.executable, or the resolved --python path
  nlohmann::json python_probe;    // the script's JSON

  std::vector<Runtime> runtimes;
};

void probe_nvml_first(Facts& f);  // no report lines: check_nvml reports
void check_driver(Facts& f, Report& r);
void check_toolkit(Facts& f, Report& r);
void check_python(Facts& f, Report& r);
void check_runtimes(Facts& f, Report& r);
void check_cupti(Facts& f, Report& r);
void check_nvml(Facts& f, Report& r);
void check_gpus(Facts& f, Report& r);
void check_tracing(Facts& f, Report& r);
void check_environment(Facts& f, Report& r);

// The Python probe script (python_probe.py, embedded at build time).
extern const char* const kPythonProbeScript;

}  // namespace vt::doctor
