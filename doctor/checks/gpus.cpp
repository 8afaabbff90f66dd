// The GPUs: name, memory total/used/free, compute capability and the processes holding memory
// on each. NVML is the source when it works (it sees other processes); otherwise the CUDA
// driver (count, names, totals, and free memory through a briefly retained primary context).
#include "byte_size.h"
#include "../util.h"
#include "checks.h"

namespace vt::doctor {

namespace {

// A GPU this full before the program starts explains most "out of memory" reports.
constexpr double kBusyFraction = 0.5;

std::string capability(const nlohmann::json& d) {
  if (!d.contains("cc_major")) return {};
  return std::to_string(d["cc_major"].get<int>()) + "." + std::to_string(d["cc_minor"].get<int>());
}

void add_device(Report& r, const nlohmann::json& d, const std::string& source) {
  uint64_t total = d.value("total_bytes", uint64_t(0));
  bool have_free = d.contains("free_bytes");
  uint64_t free_b = d.value("free_bytes", uint64_t(0));
  uint64_t used =
      d.contains("used_bytes") ? d["used_bytes"].get<uint64_t>() : (have_free && total >= free_b ? total - free_b : 0);
  std::string name = d.value("name", std::string("unknown GPU"));
  int index = d.value("index", 0);
  std::string msg = "GPU " + std::to_string(index) + ": " + name + ", " + format_bytes(total);
  const nlohmann::json procs = d.value("processes", nlohmann::json::array());
  if (have_free) {
    msg += ": " + format_bytes(used) + " used";
    if (source == "nvml")
      msg += " (" + std::to_string(procs.size()) + (procs.size() == 1 ? " process)" : " processes)");
    msg += ", " + format_bytes(free_b) + " free";
  }
  if (!capability(d).empty()) msg += "; compute capability " + capability(d);
  Check& c = r.add("gpus", "gpus.device", Verdict::ok, msg);
  nlohmann::json data = {{"index", index},
                         {"name", name},
                         {"source", source},
                         {"total_bytes", total},
                         {"used_bytes", have_free ? nlohmann::json(used) : nlohmann::json(nullptr)},
                         {"free_bytes", have_free ? nlohmann::json(free_b) : nlohmann::json(nullptr)},
                         {"compute_capability", capability(d)}};
  if (d.contains("uuid")) data["uuid"] = d["uuid"];
  if (source == "nvml") {
    data["processes"] = procs;
    for (const nlohmann::json& p : procs) {
      std::string line = "pid " + std::to_string(p.value("pid", 0)) + " " + p.value("name", std::string("?")) + " (" +
                         p.value("type", std::string("compute")) + "): ";
      line += p["used_bytes"].is_null() ? "memory not reported (another container, or no permission)"
                                        : format_bytes(p["used_bytes"].get<uint64_t>());
      c.details.push_back(line);
    }
    if (d.value("processes_result", 0) != 0)
      c.details.push_back("process list unavailable (NVML error " + std::to_string(d.value("processes_result", 0)) +
                          ")");
  } else {
    data["processes"] = nullptr;
    c.details.push_back(have_free ? "from the CUDA driver (no NVML, so processes are unknown); used includes this "
                                    "check's own CUDA context"
                                  : "from the CUDA driver (no NVML); free memory unknown");
  }
  c.data = data;
  if (have_free && total && double(used) / double(total) >= kBusyFraction) {
    c.verdict = Verdict::warning;
    c.advice = std::to_string(int(100.0 * double(used) / double(total) + 0.5)) +
               "% of this GPU is in use before your program starts: free it, or pick another GPU with "
               "CUDA_VISIBLE_DEVICES";
  }
}

}  // namespace

void check_gpus(Facts& f, Report& r) {
  const nlohmann::json& n = f.nvml.value;
  if (f.nvml_initialised() && n.contains("devices")) {
    if (n["devices"].empty()) {
      r.add("gpus", "gpus.none", Verdict::problem, "NVML sees no GPU", "check `nvidia-smi` and `dmesg`");
      return;
    }
    for (const nlohmann::json& d : n["devices"]) add_device(r, d, "nvml");
    // NVML lists every GPU; CUDA only the ones CUDA_VISIBLE_DEVICES leaves.
    if (f.driver_initialised() && f.driver.value.contains("devices") &&
        f.driver.value["devices"].size() != n["devices"].size())
      r.add("gpus", "gpus.visible", Verdict::info,
            "CUDA sees " + std::to_string(f.driver.value["devices"].size()) + " of the " +
                std::to_string(n["devices"].size()) + " GPUs (CUDA_VISIBLE_DEVICES=" +
                getenv_str("CUDA_VISIBLE_DEVICES") + "); CUDA numbers the visible ones from 0")
          .data = {{"cuda", f.driver.value["devices"].size()}, {"nvml", n["devices"].size()}};
    return;
  }
  if (f.driver_initialised() && f.driver.value.contains("devices") && !f.driver.value["devices"].empty()) {
    for (const nlohmann::json& d : f.driver.value["devices"]) add_device(r, d, "cuda");
    return;
  }
  r.add("gpus", "gpus.none", Verdict::skipped,
        f.driver_loaded() ? "no GPU to list (cuInit failed, see above)" : "no driver: GPUs not listed");
}

}  // namespace vt::doctor
