// NVML (libnvidia-ml.so.1), the driver's management library: loadable, initialised, its and the
// driver's versions, and whether the CUDA version it reports agrees with the loaded libcuda (a
// disagreement means the libcuda in use is not the one installed with the kernel driver).
#include "../util.h"
#include "../versions.h"
#include "checks.h"

namespace vt::doctor {

void check_nvml(Facts& f, Report& r) {
  const nlohmann::json& n = f.nvml.value;
  if (!f.nvml.ok) {
    r.add("nvml", "nvml.library", Verdict::problem, "probing " + f.overrides.libnvml + " failed: " + f.nvml.error,
          "NVML crashed or hung: check `nvidia-smi` and `dmesg`")
        .data = {{"requested", f.overrides.libnvml}, {"loaded", false}, {"error", f.nvml.error}};
    return;
  }
  if (!n.value("loaded", false)) {
    // Without a driver there is no NVML either; that absence is already the driver's problem.
    r.add("nvml", "nvml.library", f.driver_loaded() ? Verdict::warning : Verdict::info,
          "no NVML: cannot load " + f.overrides.libnvml + " (" + n.value("error", std::string()) + ")",
          f.driver_loaded() ? "GPU processes cannot be listed (free memory comes from the CUDA driver instead); "
                              "NVML ships with the driver: reinstall the driver's utilities package"
                            : "")
        .data = {{"requested", f.overrides.libnvml}, {"loaded", false}, {"error", n.value("error", std::string())}};
    return;
  }
  nlohmann::json data = {{"requested", f.overrides.libnvml},
                         {"loaded", true},
                         {"path", n.value("path", f.overrides.libnvml)},
                         {"init_result", n.value("init_result", -1)}};
  if (!f.nvml_initialised()) {
    int res = n.value("init_result", -1);
    r.add("nvml", "nvml.library", Verdict::problem,
          "NVML at " + n.value("path", f.overrides.libnvml) + " failed to initialise: " +
              n.value("init_string", "nvmlReturn " + std::to_string(res)) + " (" + std::to_string(res) + ")",
          nvml_init_advice(res))
        .data = data;
    return;
  }
  std::string driver = n.value("driver_version", std::string("?"));
  std::string version = n.value("nvml_version", std::string("?"));
  int cuda = n.value("cuda_driver_version", 0);
  data["driver_version"] = driver;
  data["nvml_version"] = version;
  data["cuda_driver_version"] = cuda ? nlohmann::json(cuda) : nlohmann::json(nullptr);
  r.add("nvml", "nvml.library", Verdict::ok,
        "NVML " + version + " at " + n.value("path", f.overrides.libnvml) + ": driver " + driver +
            (cuda ? ", CUDA " + cuda_version_string(cuda) : ""))
      .data = data;

  int libcuda = f.driver_version();
  if (cuda && libcuda && cuda != libcuda) {
    bool compat = f.driver_path().find("/compat/") != std::string::npos;
    r.add("nvml", "nvml.agreement", compat ? Verdict::info : Verdict::warning,
          "the kernel driver supports CUDA " + cuda_version_string(cuda) + " but the loaded libcuda (" +
              f.driver_path() + ") reports CUDA " + cuda_version_string(libcuda),
          compat ? ""
                 : "a libcuda other than the driver's own is loaded (a copy in a container image or on "
                   "LD_LIBRARY_PATH): remove it so the driver's libcuda.so.1 is used")
        .data = {{"nvml_cuda", cuda}, {"libcuda_cuda", libcuda}, {"libcuda_path", f.driver_path()}};
  }
}

}  // namespace vt::doctor
