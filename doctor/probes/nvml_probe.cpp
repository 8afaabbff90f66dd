// Asking NVML, in a child, about the driver, every GPU and the processes using each (see
// probes.h). Older NVMLs lack the _v2/_v3 spellings, so each function falls back to its older
// name, and the process list's struct layout follows the function that was found.
#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <map>
#include <vector>

#include "../util.h"
#include "nvml_api.h"
#include "probes.h"

namespace vt::doctor {

namespace {

template <typename Fn>
Fn sym(void* h, std::initializer_list<const char*> names, std::string* found = nullptr) {
  for (const char* n : names) {
    if (void* p = dlsym(h, n)) {
      if (found) *found = n;
      return reinterpret_cast<Fn>(p);
    }
  }
  return nullptr;
}

// Process names: NVML's own answer works across PID namespaces where /proc does not.
std::string process_name(nvml::ProcessNameFn fn, unsigned pid) {
  char buf[256] = {};
  if (fn && fn(pid, buf, sizeof buf) == nvml::kSuccess && buf[0]) return buf;
  if (auto comm = read_text("/proc/" + std::to_string(pid) + "/comm", 256)) return trim(*comm);
  return {};
}

// One process-list query: asks for the count first, retries if processes appeared meanwhile.
// Returns the NVML result; rows are normalised to (pid, used bytes).
nvml::Return list_processes(nvml::ProcessesFn fn, bool v2_layout, nvml::Device dev,
                            std::vector<std::pair<unsigned, unsigned long long>>* out) {
  unsigned count = 0;
  nvml::Return r = fn(dev, &count, nullptr);
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (r == nvml::kSuccess && count == 0) return r;
    if (r != nvml::kSuccess && r != nvml::kInsufficientSize) return r;
    unsigned cap = count + 8;
    size_t row = v2_layout ? sizeof(nvml::ProcessInfoV2) : sizeof(nvml::ProcessInfoV1);
    std::vector<unsigned char> buf(cap * row);
    count = cap;
    r = fn(dev, &count, buf.data());
    if (r == nvml::kSuccess) {
      for (unsigned i = 0; i < count && i < cap; ++i) {
        if (v2_layout) {
          nvml::ProcessInfoV2 p;
          memcpy(&p, buf.data() + i * row, sizeof p);
          out->push_back({p.pid, p.usedGpuMemory});
        } else {
          nvml::ProcessInfoV1 p;
          memcpy(&p, buf.data() + i * row, sizeof p);
          out->push_back({p.pid, p.usedGpuMemory});
        }
      }
      return r;
    }
  }
  return r;
}

nlohmann::json nvml_answers(const std::string& lib) {
  nlohmann::json j = {{"requested", lib}};
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  j["loaded"] = h != nullptr;
  if (!h) {
    const char* e = dlerror();
    j["error"] = e ? e : "dlopen failed";
    return j;
  }
  link_map* lm = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name) j["path"] = real_path(lm->l_name);

  auto init = sym<nvml::InitFn>(h, {"nvmlInit_v2", "nvmlInit"});
  auto shutdown = sym<nvml::ShutdownFn>(h, {"nvmlShutdown"});
  auto error_string = sym<nvml::ErrorStringFn>(h, {"nvmlErrorString"});
  if (!init) {
    j["error"] = "no nvmlInit in this library";
    return j;
  }
  nvml::Return r = init();
  j["init_result"] = r;
  if (r != nvml::kSuccess) {
    if (error_string && error_string(r)) j["init_string"] = error_string(r);
    return j;
  }
  char buf[256];
  if (auto f = sym<nvml::StringFn>(h, {"nvmlSystemGetDriverVersion"}); f && f(buf, sizeof buf) == nvml::kSuccess)
    j["driver_version"] = buf;
  if (auto f = sym<nvml::StringFn>(h, {"nvmlSystemGetNVMLVersion"}); f && f(buf, sizeof buf) == nvml::kSuccess)
    j["nvml_version"] = buf;
  int cuda = 0;
  if (auto f = sym<nvml::IntFn>(h, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"});
      f && f(&cuda) == nvml::kSuccess)
    j["cuda_driver_version"] = cuda;

  auto count_fn = sym<nvml::CountFn>(h, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  auto handle_fn = sym<nvml::HandleFn>(h, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  auto name_fn = sym<nvml::DeviceStringFn>(h, {"nvmlDeviceGetName"});
  auto uuid_fn = sym<nvml::DeviceStringFn>(h, {"nvmlDeviceGetUUID"});
  auto mem_fn = sym<nvml::MemoryFn>(h, {"nvmlDeviceGetMemoryInfo"});
  auto cc_fn = sym<nvml::CapabilityFn>(h, {"nvmlDeviceGetCudaComputeCapability"});
  auto pname_fn = sym<nvml::ProcessNameFn>(h, {"nvmlSystemGetProcessName"});
  std::string compute_api, graphics_api;
  auto compute_fn =
      sym<nvml::ProcessesFn>(h,
                             {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2",
                              "nvmlDeviceGetComputeRunningProcesses"},
                             &compute_api);
  auto graphics_fn =
      sym<nvml::ProcessesFn>(h,
                             {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2",
                              "nvmlDeviceGetGraphicsRunningProcesses"},
                             &graphics_api);
  // The plain (v1) names take the 16-byte row; _v2 and _v3 the 24-byte one.
  auto is_v2 = [](const std::string& n) { return n.size() > 3 && n[n.size() - 3] == '_' && n[n.size() - 2] == 'v'; };

  unsigned count = 0;
  if (count_fn && handle_fn && count_fn(&count) == nvml::kSuccess) {
    j["devices"] = nlohmann::json::array();
    for (unsigned i = 0; i < count; ++i) {
      nvml::Device dev = nullptr;
      if (handle_fn(i, &dev) != nvml::kSuccess) continue;
      nlohmann::json d = {{"index", i}};
      if (name_fn && name_fn(dev, buf, sizeof buf) == nvml::kSuccess) d["name"] = buf;
      if (uuid_fn && uuid_fn(dev, buf, sizeof buf) == nvml::kSuccess) d["uuid"] = buf;
      nvml::Memory m{};
      if (mem_fn && mem_fn(dev, &m) == nvml::kSuccess) {
        d["total_bytes"] = m.total;
        d["used_bytes"] = m.used;
        d["free_bytes"] = m.free;
      }
      int major = 0, minor = 0;
      if (cc_fn && cc_fn(dev, &major, &minor) == nvml::kSuccess) {
        d["cc_major"] = major;
        d["cc_minor"] = minor;
      }
      // pid -> (bytes, types); a process doing both compute and graphics appears once.
      std::map<unsigned, std::pair<unsigned long long, std::string>> procs;
      if (compute_fn) {
        std::vector<std::pair<unsigned, unsigned long long>> rows;
        d["processes_api"] = compute_api;
        nvml::Return pr = list_processes(compute_fn, is_v2(compute_api), dev, &rows);
        d["processes_result"] = pr;
        for (auto& [pid, bytes] : rows) procs[pid] = {bytes, "compute"};
      }
      if (graphics_fn) {
        std::vector<std::pair<unsigned, unsigned long long>> rows;
        if (list_processes(graphics_fn, is_v2(graphics_api), dev, &rows) == nvml::kSuccess) {
          for (auto& [pid, bytes] : rows) {
            auto it = procs.find(pid);
            if (it == procs.end())
              procs[pid] = {bytes, "graphics"};
            else
              it->second.second = "compute+graphics";
          }
        }
      }
      d["processes"] = nlohmann::json::array();
      for (auto& [pid, v] : procs) {
        nlohmann::json p = {{"pid", pid}, {"name", process_name(pname_fn, pid)}, {"type", v.second}};
        p["used_bytes"] = v.first == nvml::kValueNotAvailable ? nlohmann::json(nullptr) : nlohmann::json(v.first);
        d["processes"].push_back(p);
      }
      j["devices"].push_back(d);
    }
  }
  if (shutdown) shutdown();
  return j;
}

}  // namespace

Isolated probe_nvml(const std::string& lib) {
  return run_isolated([&] { return nvml_answers(lib); }, 60);
}

}  // namespace vt::doctor
