// CUDA runtimes (libcudart): every copy the toolkits and the Python environment hold, the
// version each really is (cudaRuntimeGetVersion in a child, else the file name), and whether
// the driver can run it. A runtime needs a driver of at least its own CUDA version; within one
// major version, CUDA's minor-version compatibility lets it run with limits.
#include <algorithm>
#include <map>

#include "../probes/probes.h"
#include "../util.h"
#include "../versions.h"
#include "checks.h"

namespace vt::doctor {

namespace {

void merge_python_runtimes(Facts& f) {
  if (!f.python_ran || !f.python_probe.contains("libraries")) return;
  for (const nlohmann::json& lib : f.python_probe["libraries"]) {
    if (lib.value("kind", std::string()) != "cudart") continue;
    Runtime rt;
    rt.path = lib.value("path", std::string());
    for (const auto& o : lib.value("owners", nlohmann::json::array())) rt.owners.push_back(o.get<std::string>());
    f.runtimes.push_back(rt);
  }
}

// One entry per real file: the toolkit's lib64 and lib often are the same directory.
void dedupe(std::vector<Runtime>& v) {
  std::vector<Runtime> out;
  std::map<std::string, size_t> index;
  for (Runtime& rt : v) {
    std::string real = real_path(rt.path);
    auto it = index.find(real);
    if (it == index.end()) {
      index[real] = out.size();
      out.push_back(rt);
      continue;
    }
    for (const std::string& o : rt.owners) {
      auto& owners = out[it->second].owners;
      if (std::find(owners.begin(), owners.end(), o) == owners.end()) owners.push_back(o);
    }
  }
  v.swap(out);
}

void read_version(Runtime& rt) {
  Isolated p = probe_version_function(rt.path, "cudaRuntimeGetVersion");
  if (p.ok && p.value.value("loaded", false) && p.value.value("result", -1) == 0 && p.value.value("version", 0) > 0) {
    rt.version = p.value["version"];
    rt.version_source = "cudaRuntimeGetVersion";
    return;
  }
  rt.load_error = !p.ok ? p.error : p.value.value("error", std::string("cudaRuntimeGetVersion failed"));
  // The soname carries the major (and for older runtimes the minor).
  rt.version = version_from_file_name(base_name(real_path(rt.path)));
  if (!rt.version) rt.version = version_from_file_name(base_name(rt.path));
  if (rt.version) rt.version_source = "file name";
}

}  // namespace

void check_runtimes(Facts& f, Report& r) {
  merge_python_runtimes(f);
  dedupe(f.runtimes);
  if (f.runtimes.empty()) {
    r.add("runtimes", "runtimes.cudart", Verdict::info,
          f.python_ran ? "no libcudart in the toolkits or the Python environment"
                       : "no libcudart in the toolkits (Python not checked)");
    return;
  }
  int driver = f.driver_version();
  std::map<int, std::vector<std::string>> by_major;
  for (Runtime& rt : f.runtimes) {
    read_version(rt);
    std::string owners = join(rt.owners, ", ");
    std::string ver = rt.version ? "CUDA " + cuda_version_string(rt.version) : "unknown-version";
    // A version read from a file name is only as precise as the name.
    if (rt.version_source == "file name") ver = "CUDA " + std::to_string(cuda_major(rt.version)) + ".x";
    Check& c = r.add("runtimes", "runtimes.cudart", Verdict::ok, ver + " runtime at " + rt.path + " (" + owners + ")");
    c.data = {{"path", rt.path},
              {"real_path", real_path(rt.path)},
              {"owners", rt.owners},
              {"version", rt.version ? nlohmann::json(rt.version) : nlohmann::json(nullptr)},
              {"cuda", cuda_version_string(rt.version)},
              {"version_source", rt.version_source},
              {"driver_supports", nullptr}};
    if (!rt.load_error.empty()) c.details.push_back("could not load it to ask its version: " + rt.load_error);
    if (!rt.version) {
      c.verdict = Verdict::warning;
      c.advice = "cannot tell its CUDA version; if a program fails to load it, reinstall the package that owns it";
      continue;
    }
    by_major[cuda_major(rt.version)].push_back(cuda_version_string(rt.version) + ": " + owners);
    if (!driver) {
      c.verdict = Verdict::info;
      c.message += "; not compared with the driver (none usable)";
      continue;
    }
    std::string branch = driver_branch_for(rt.version);
    std::string upgrade = "upgrade the NVIDIA driver to one for CUDA " + cuda_version_string(rt.version) +
                          (branch.empty() ? "" : " (" + branch + " or later)");
    if (cuda_major(rt.version) > cuda_major(driver)) {
      c.verdict = Verdict::problem;
      c.data["driver_supports"] = false;
      c.message += ": the driver is too old for it (supports CUDA up to " + cuda_version_string(driver) + ")";
      c.advice = upgrade + ", or install framework builds for CUDA " + std::to_string(cuda_major(driver)) +
                 "; programs using this runtime fail with \"CUDA driver version is insufficient\"";
    } else if (rt.version_source != "file name" && rt.version > driver) {
      // Same major, newer minor: runs through minor-version compatibility, which misses PTX
      // JIT for the newer version and the newest APIs.
      c.verdict = Verdict::warning;
      c.data["driver_supports"] = true;
      c.message += ": newer than the driver (CUDA " + cuda_version_string(driver) +
                   "), runs through minor-version compatibility";
      c.advice = "kernels shipped only as PTX for CUDA " + cuda_version_string(rt.version) +
                 " and the newest APIs fail (cudaErrorUnsupportedPtxVersion); " + upgrade;
    } else {
      c.data["driver_supports"] = true;
    }
    if (c.verdict == Verdict::ok && f.driver_simulated()) {  // "ok" would promise it runs here
      c.verdict = Verdict::info;
      c.message += "; it does not run on the simulated driver (801, cudaErrorNotSupported)";
    }
  }
  if (by_major.size() > 1) {
    std::vector<std::string> majors;
    nlohmann::json data = nlohmann::json::object();
    Check& c = r.add("runtimes", "runtimes.mismatch", Verdict::warning, "");
    for (const auto& [major, users] : by_major) {
      majors.push_back(std::to_string(major));
      data[std::to_string(major)] = users;
      for (const std::string& u : users) c.details.push_back(u);
    }
    c.message = "runtimes of different CUDA major versions: " + join(majors, " and ");
    c.advice =
        "each framework loads its own runtime, so this can work, but wheels for different CUDA majors "
        "side by side (nvidia-*-cu12 and -cu13, or a toolkit that differs from torch's CUDA) cause "
        "wrong-library loads and failed extension builds: settle on one CUDA major";
    c.data = {{"majors", data}};
  }
}

}  // namespace vt::doctor
