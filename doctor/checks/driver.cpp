// The CUDA driver: can libcuda.so.1 be loaded, from where, which CUDA version does it support
// (the ceiling for every runtime on the machine), and does cuInit succeed.
#include <algorithm>

#include "../probes/probes.h"
#include "../util.h"
#include "../versions.h"
#include "checks.h"

namespace vt::doctor {

void probe_nvml_first(Facts& f) { f.nvml = probe_nvml(f.overrides.libnvml); }

void check_driver(Facts& f, Report& r) {
  f.driver = probe_driver(f.overrides.libcuda, /*with_memory=*/!f.nvml_initialised());
  const nlohmann::json& d = f.driver.value;
  if (!f.driver.ok) {
    r.add("driver", "driver.library", Verdict::problem, "probing " + f.overrides.libcuda + " failed: " + f.driver.error,
          "the driver library crashed or hung while loading or in cuInit: check `nvidia-smi` and `dmesg`")
        .data = {{"requested", f.overrides.libcuda}, {"loaded", false}, {"error", f.driver.error}};
    return;
  }
  if (!f.driver_loaded()) {
    r.add("driver", "driver.library", Verdict::problem,
          "no CUDA driver: cannot load " + f.overrides.libcuda + " (" + d.value("error", std::string()) + ")",
          "install the NVIDIA driver (`nvidia-smi` should work); in a container, start it with GPU "
          "access (--gpus all / the NVIDIA container toolkit)")
        .data = {{"requested", f.overrides.libcuda}, {"loaded", false}, {"error", d.value("error", std::string())}};
    return;
  }

  std::string path = f.driver_path();
  // A bare soname was searched for; say where it was found. An explicit path speaks for itself.
  bool searched = f.overrides.libcuda.find('/') == std::string::npos;
  Check& lib = r.add("driver", "driver.library", Verdict::ok,
                     searched ? f.overrides.libcuda + " loaded from " + path : "driver library " + path + " loaded");
  lib.data = {
      {"requested", f.overrides.libcuda}, {"loaded", true}, {"path", path}, {"loaded_as", d.value("loaded_as", path)}};
  if (path.find("/stubs/") != std::string::npos) {
    lib.verdict = Verdict::problem;
    lib.advice = cu_init_advice(34);
  } else if (path.find("/compat/") != std::string::npos) {
    lib.details.push_back(
        "this is a forward-compatibility libcuda (cuda-compat): it lets an older "
        "kernel driver run newer CUDA, on data-center GPUs only");
  }

  int v = f.driver_version();
  if (v > 0) {
    // NVML knows the driver's release number (535.104.05); libcuda only its CUDA level.
    std::string release;
    if (f.nvml_initialised() && f.nvml.value.contains("driver_version"))
      release = " " + f.nvml.value["driver_version"].get<std::string>();
    std::string msg = "driver" + release + " supports CUDA up to " + cuda_version_string(v) + " (cuDriverGetVersion " +
                      std::to_string(v) + ")";
    r.add("driver", "driver.version", Verdict::ok, msg).data = {{"version", v}, {"cuda", cuda_version_string(v)}};
  } else {
    r.add("driver", "driver.version", Verdict::problem, "cuDriverGetVersion failed or is missing",
          "the library at " + path + " does not behave like a CUDA driver")
        .data = {{"version", nullptr}};
  }

  if (!d.contains("init_result")) {
    r.add("driver", "driver.init", Verdict::problem, d.value("error", std::string("cuInit not called")));
    return;
  }
  int init = d["init_result"];
  std::string name = d.value("init_name", "CUresult " + std::to_string(init));
  nlohmann::json data = {{"result", init}, {"name", name}};
  if (init == 0) {
    size_t n = d.contains("devices") ? d["devices"].size() : 0;
    data["devices"] = n;
    r.add("driver", "driver.init", Verdict::ok,
          "cuInit succeeded: " + std::to_string(n) + (n == 1 ? " GPU" : " GPUs") + " visible to CUDA")
        .data = data;
    // (Found again: `lib` may have moved as checks were added.)
    Check& named = r.checks[size_t(std::find_if(r.checks.begin(), r.checks.end(),
                                                [](const Check& c) { return c.id == "driver.library"; }) -
                                   r.checks.begin())];
    named.data["simulated"] = f.driver_simulated();
    if (f.driver_simulated()) {
      // Said where the driver is named: everything below is about a driver that is not a GPU.
      named.verdict = Verdict::info;
      named.message += ": vramtrace's SIMULATED driver (tests/fakecuda), not a GPU";
      named.advice = "programs that call the driver API (-lcuda) run and are traced on it; the real CUDA runtime, "
                   "and so PyTorch, JAX and CuPy, does not (cudart answers 801, cudaErrorNotSupported): use a GPU "
                   "machine for those";
    }
  } else {
    std::string why = d.value("init_string", std::string());
    r.add("driver", "driver.init", Verdict::problem,
          "cuInit failed: " + name + " (" + std::to_string(init) + ")" + (why.empty() ? "" : ": " + why),
          cu_init_advice(init))
        .data = data;
  }
}

}  // namespace vt::doctor
