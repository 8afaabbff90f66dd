// Probes: each dlopens one library in a forked child (isolate.h), asks it questions and returns
// the answers as JSON, so a missing, broken or hanging library can never take the doctor down.
// The JSON fields are listed per probe; absent fields mean "not asked" or "not available".
#pragma once

#include <string>

#include "../isolate.h"

namespace vt::doctor {

// libcuda: {requested, loaded, error, path (resolved through dlinfo), version_result, version,
//   init_result, init_name, init_string, devices: [{index, name, total_bytes, cc_major, cc_minor,
//   free_bytes, mem_result}]}. With with_memory, free memory per device comes from
//   cuMemGetInfo_v2 in a retained (then released) primary context.
Isolated probe_driver(const std::string& lib, bool with_memory);

// NVML: {requested, loaded, error, path, init_result, init_string, driver_version, nvml_version,
//   cuda_driver_version, devices: [{index, name, uuid, total_bytes, used_bytes, free_bytes,
//   cc_major, cc_minor, processes: [{pid, name, used_bytes (null: not available), type}],
//   processes_api, processes_result}]}
Isolated probe_nvml(const std::string& lib);

// `int symbol(int*)` of a library (cudaRuntimeGetVersion, cuptiGetVersion):
//   {loaded, error, path, found, result, version}
Isolated probe_version_function(const std::string& lib, const std::string& symbol);

// Just loading it: {loaded, error, path}
Isolated probe_dlopen(const std::string& lib);

}  // namespace vt::doctor
