// Reading the probes' answers kept in Facts (see checks.h).
#include "checks.h"

namespace vt::doctor {

bool Facts::nvml_initialised() const {
  return nvml.ok && nvml.value.value("loaded", false) && nvml.value.value("init_result", -1) == 0;
}

bool Facts::driver_loaded() const { return driver.ok && driver.value.value("loaded", false); }

bool Facts::driver_initialised() const { return driver_loaded() && driver.value.value("init_result", -1) == 0; }

int Facts::driver_version() const {
  if (!driver_loaded() || driver.value.value("version_result", -1) != 0) return 0;
  return driver.value.value("version", 0);
}

std::string Facts::driver_path() const {
  return driver_loaded() ? driver.value.value("path", driver.value.value("requested", std::string())) : std::string();
}

bool Facts::driver_simulated() const {
  if (!driver_loaded() || !driver.value.contains("devices") || !driver.value["devices"].is_array()) return false;
  for (const nlohmann::json& d : driver.value["devices"])
    if (d.is_object() && d.value("name", std::string()).find("(vramtrace simulated)") != std::string::npos) return true;
  return false;
}

}  // namespace vt::doctor
