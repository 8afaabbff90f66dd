// CUPTI, the profiling interface vramtrace's kernel-activity view needs: every copy in the
// toolkits, the Python environment and next to each runtime, its version (cuptiGetVersion in a
// child), and whether each runtime's CUDA major has a CUPTI of the same major (a CUPTI only
// works with the runtime and driver of its own major).
#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "../probes/probes.h"
#include "../util.h"
#include "../versions.h"
#include "checks.h"

namespace vt::doctor {

namespace {

struct Cupti {
  std::string path;
  std::vector<std::string> owners;
  uint32_t api = 0;
  int cuda = 0;  // CUDA release, from the API version or the file name
  std::string source;
};

void add(std::vector<Cupti>& v, std::map<std::string, size_t>& index, const std::string& path,
         const std::string& owner) {
  std::string real = real_path(path);
  auto it = index.find(real);
  if (it == index.end()) {
    index[real] = v.size();
    Cupti c;
    c.path = path;
    c.owners.push_back(owner);
    v.push_back(c);
  } else if (std::find(v[it->second].owners.begin(), v[it->second].owners.end(), owner) == v[it->second].owners.end()) {
    v[it->second].owners.push_back(owner);
  }
}

void add_dir(std::vector<Cupti>& v, std::map<std::string, size_t>& index, const std::string& dir,
             const std::string& owner) {
  static const std::regex versioned(R"(^libcupti\.so\.\d+(\.\d+)*$)");
  for (const std::string& n : list_dir(dir))
    if (std::regex_match(n, versioned)) add(v, index, dir + "/" + n, owner);
}

std::vector<Cupti> find_cupti(const Facts& f) {
  std::vector<Cupti> v;
  std::map<std::string, size_t> index;
  if (!f.overrides.libcupti.empty()) {
    if (is_file(f.overrides.libcupti)) add(v, index, f.overrides.libcupti, "VRAMTRACE_DOCTOR_LIBCUPTI");
    return v;
  }
  for (const Toolkit& t : f.toolkits)
    for (const char* sub :
         {"/extras/CUPTI/lib64", "/lib64", "/lib", "/targets/x86_64-linux/lib", "/targets/sbsa-linux/lib"})
      add_dir(v, index, t.path + sub, "toolkit " + t.path);
  if (f.python_ran && f.python_probe.contains("libraries"))
    for (const nlohmann::json& lib : f.python_probe["libraries"])
      if (lib.value("kind", std::string()) == "cupti")
        for (const auto& o : lib.value("owners", nlohmann::json::array()))
          add(v, index, lib.value("path", std::string()), o.get<std::string>());
  // Frameworks that bundle their runtime often bundle CUPTI beside it.
  for (const Runtime& rt : f.runtimes) add_dir(v, index, dir_of(rt.path), "beside " + rt.path);
  return v;
}

}  // namespace

void check_cupti(Facts& f, Report& r) {
  std::vector<Cupti> found = find_cupti(f);
  std::set<int> runtime_majors;
  for (const Runtime& rt : f.runtimes)
    if (rt.version) runtime_majors.insert(cuda_major(rt.version));
  if (found.empty()) {
    r.add("cupti", "cupti.missing", Verdict::warning,
          f.overrides.libcupti.empty() ? "no CUPTI library found (toolkit extras/CUPTI, lib64, Python wheels)"
                                   : "no CUPTI at " + f.overrides.libcupti,
          "vramtrace's kernel-activity view needs CUPTI of the runtime's CUDA major: install the toolkit's "
          "cuda-cupti package or `pip install nvidia-cuda-cupti-cu12` (cu13 for CUDA 13)")
        .data = {{"runtime_majors", runtime_majors}};
    return;
  }
  std::set<int> cupti_majors;
  for (Cupti& c : found) {
    Isolated p = probe_version_function(c.path, "cuptiGetVersion");
    std::string error;
    if (p.ok && p.value.value("loaded", false) && p.value.value("result", -1) == 0) {
      c.api = p.value.value("version", 0u);
      c.cuda = cupti_api_to_cuda(c.api);
      c.source = "cuptiGetVersion";
    } else {
      error = !p.ok ? p.error : p.value.value("error", std::string("cuptiGetVersion failed"));
    }
    if (!c.cuda) {
      c.cuda = version_from_file_name(base_name(real_path(c.path)));
      if (c.cuda) c.source = "file name";
    }
    int major = c.cuda ? cuda_major(c.cuda) : 0;
    if (major) cupti_majors.insert(major);
    bool matches = major && runtime_majors.count(major);
    Check& chk = r.add("cupti", "cupti.library", Verdict::ok,
                       std::string("CUPTI ") + (major ? "for CUDA " + std::to_string(major) : "of unknown version") +
                           (c.api ? " (API version " + std::to_string(c.api) + ")" : "") + " at " + c.path + " (" +
                           join(c.owners, ", ") + ")");
    chk.data = {{"path", c.path},
                {"owners", c.owners},
                {"api_version", c.api ? nlohmann::json(c.api) : nlohmann::json(nullptr)},
                {"cuda_major", major ? nlohmann::json(major) : nlohmann::json(nullptr)},
                {"version_source", c.source},
                {"matches_runtime", matches}};
    if (!error.empty()) chk.details.push_back("could not load it to ask its version: " + error);
    if (!major) {
      chk.verdict = Verdict::warning;
      chk.advice = "cannot tell which CUDA it belongs to; reinstall it";
    } else if (!runtime_majors.empty() && !matches) {
      chk.verdict = Verdict::info;
      chk.message += "; no runtime of this major here";
    } else if (f.driver_simulated()) {
      chk.verdict = Verdict::info;
      chk.message += "; it records nothing on the simulated driver (kernel activity needs a GPU)";
    }
  }
  for (int m : runtime_majors) {
    if (cupti_majors.count(m)) continue;
    std::vector<std::string> users;
    for (const Runtime& rt : f.runtimes)
      if (rt.version && cuda_major(rt.version) == m) users.push_back(join(rt.owners, ", "));
    r.add("cupti", "cupti.match", Verdict::warning,
          "no CUPTI for CUDA " + std::to_string(m) + " (the runtime of " + join(users, "; ") + ")",
          "CUPTI must match the runtime's major version: install nvidia-cuda-cupti-cu" + std::to_string(m) +
              " or the CUDA " + std::to_string(m) + " toolkit's cuda-cupti package")
        .data = {{"cuda_major", m}, {"runtimes", users}};
  }
}

}  // namespace vt::doctor
