// CUDA toolkits: where they are (CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda and its
// versioned siblings), which version each is, which one builds use, and whether the driver can
// run what it builds. Each toolkit's libcudart joins the runtime list checked in runtimes.cpp.
#include <regex>
#include <set>

#include "../isolate.h"
#include "../util.h"
#include "../versions.h"
#include "checks.h"

namespace vt::doctor {

namespace {

// version.json (CUDA 11.1+), version.txt (older), nvcc --version, then cuda.h's CUDA_VERSION.
void read_version(Toolkit& t) {
  if (auto text = read_text(t.path + "/version.json")) {
    try {
      auto j = nlohmann::json::parse(*text);
      if (j.contains("cuda") && j["cuda"].contains("version")) {
        t.version = parse_cuda_version(j["cuda"]["version"].get<std::string>());
        if (t.version) {
          t.version_source = "version.json";
          return;
        }
      }
    } catch (const std::exception&) {
    }
  }
  if (auto text = read_text(t.path + "/version.txt")) {
    std::smatch m;
    if (std::regex_search(*text, m, std::regex(R"(CUDA Version (\d+\.\d+))")) &&
        (t.version = parse_cuda_version(m[1]))) {
      t.version_source = "version.txt";
      return;
    }
  }
  std::string nvcc = t.path + "/bin/nvcc";
  if (is_file(nvcc)) {
    ProgramResult p = run_program({nvcc, "--version"}, {}, 30);
    std::smatch m;
    if (p.started && std::regex_search(p.out, m, std::regex(R"(release (\d+\.\d+))")) &&
        (t.version = parse_cuda_version(m[1]))) {
      t.version_source = "nvcc --version";
      return;
    }
  }
  if (auto text = read_text(t.path + "/include/cuda.h")) {
    std::smatch m;
    if (std::regex_search(*text, m, std::regex(R"(#define\s+CUDA_VERSION\s+(\d+))"))) {
      t.version = std::stoi(m[1]);
      t.version_source = "cuda.h";
    }
  }
}

std::vector<std::string> cudart_files(const std::string& toolkit) {
  std::vector<std::string> out;
  static const std::regex versioned(R"(^libcudart\.so\.\d+(\.\d+)*$)");
  for (const char* sub : {"/lib64", "/lib", "/targets/x86_64-linux/lib", "/targets/sbsa-linux/lib"}) {
    std::string dir = toolkit + sub;
    for (const std::string& n : list_dir(dir))
      if (std::regex_match(n, versioned)) out.push_back(dir + "/" + n);
  }
  return out;
}

}  // namespace

void check_toolkit(Facts& f, Report& r) {
  std::vector<Toolkit> found;
  std::set<std::string> seen;
  auto consider = [&](const std::string& path, const std::string& by) {
    if (path.empty() || !is_dir(path)) return;
    std::string real = real_path(path);
    if (!seen.insert(real).second) return;
    Toolkit t;
    t.path = path;
    t.found_by = by;
    found.push_back(t);
  };

  std::string cuda_home = getenv_str("CUDA_HOME"), cuda_path = getenv_str("CUDA_PATH");
  for (auto [name, value] : {std::pair<const char*, std::string>{"CUDA_HOME", cuda_home}, {"CUDA_PATH", cuda_path}}) {
    if (!value.empty() && !is_dir(value))
      r.add("toolkit", "toolkit.env", Verdict::warning, std::string(name) + "=" + value + " is not a directory",
            "point it at a CUDA toolkit (the directory holding bin/nvcc) or unset it; builds of CUDA "
            "extensions (PyTorch, CuPy) use it")
          .data = {{"variable", name}, {"value", value}};
  }
  if (!cuda_home.empty() && !cuda_path.empty() && is_dir(cuda_home) && is_dir(cuda_path) &&
      real_path(cuda_home) != real_path(cuda_path))
    r.add("toolkit", "toolkit.env", Verdict::warning,
          "CUDA_HOME (" + cuda_home + ") and CUDA_PATH (" + cuda_path + ") name different toolkits",
          "tools disagree on which one to use; set both to the same toolkit")
        .data = {{"variable", "CUDA_HOME,CUDA_PATH"}, {"value", cuda_home + "," + cuda_path}};

  // The order PyTorch's extension builder uses, so "active" means what a build would pick.
  consider(cuda_home, "CUDA_HOME");
  consider(cuda_path, "CUDA_PATH");
  // With a fake root the real PATH would leak the real machine's nvcc in.
  if (f.overrides.root.empty())
    if (std::string nvcc = find_on_path("nvcc"); !nvcc.empty())
      consider(dir_of(dir_of(real_path(nvcc))), "nvcc on PATH");
  consider(f.overrides.rooted("/usr/local/cuda"), "default");
  for (const std::string& n : list_dir(f.overrides.rooted("/usr/local")))
    if (n.rfind("cuda-", 0) == 0) consider(f.overrides.rooted("/usr/local/" + n), "installed");
  consider(f.overrides.rooted("/opt/cuda"), "installed");

  if (found.empty()) {
    r.add("toolkit", "toolkit.install", Verdict::info,
          "no CUDA toolkit found (needed only to compile CUDA code; running and tracing need just the driver)");
    return;
  }
  found.front().active = true;
  int driver = f.driver_version();
  for (Toolkit& t : found) {
    read_version(t);
    std::string where = t.path;
    if (std::string real = real_path(t.path); real != t.path) where += " (-> " + real + ")";
    Check& c = r.add("toolkit", "toolkit.install", Verdict::ok, "");
    c.data = {{"path", t.path},
              {"real_path", real_path(t.path)},
              {"found_by", t.found_by},
              {"active", t.active},
              {"version", t.version ? nlohmann::json(t.version) : nlohmann::json(nullptr)},
              {"cuda", cuda_version_string(t.version)},
              {"version_source", t.version_source}};
    if (!t.version) {
      c.verdict = Verdict::warning;
      c.message = "toolkit at " + where + ": cannot tell its version (no version.json, nvcc or cuda.h)";
      c.advice = "a partial or broken install; reinstall it or point CUDA_HOME elsewhere";
    } else {
      c.message = "CUDA " + cuda_version_string(t.version) + " toolkit at " + where + " (found by " + t.found_by +
                  ", from " + t.version_source + ")" + (t.active ? "; builds use this one" : "");
      if (!t.active) c.verdict = Verdict::info;
      if (t.active && driver && cuda_major(t.version) > cuda_major(driver)) {
        c.verdict = Verdict::warning;
        c.advice = "programs built with it need a driver for CUDA " + cuda_version_string(t.version) +
                   "; this driver supports " + cuda_version_string(driver) + ": upgrade the driver";
      }
    }
    for (const std::string& lib : cudart_files(t.path)) {
      Runtime rt;
      rt.path = lib;
      rt.owners.push_back("toolkit " + t.path);
      f.runtimes.push_back(rt);
    }
  }
  f.toolkits = found;
}

}  // namespace vt::doctor
