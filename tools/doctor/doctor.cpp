// See doctor.h. Runs the checks in dependency order and prints the report.
#include "doctor.h"

#include <iostream>

#include "checks/checks.h"

namespace vt::doctor {

Report examine(const Options& opt) {
  Facts f;
  f.options = opt;
  f.hooks = Hooks::from_env();
  Report r;
  // NVML goes first although it prints later: when it can report free memory, the driver probe
  // need not create a context on every GPU just to ask.
  probe_nvml_first(f);
  check_driver(f, r);
  check_toolkit(f, r);
  check_python(f, r);
  check_runtimes(f, r);
  check_cupti(f, r);
  check_nvml(f, r);
  check_gpus(f, r);
  check_tracing(f, r);
  check_environment(f, r);
  return r;
}

}  // namespace vt::doctor

namespace vt::cli {

int doctor_command(const vt::doctor::Options& opt) {
  vt::doctor::Report r = vt::doctor::examine(opt);
  if (opt.json) std::cout << vt::doctor::render_json(r).dump(2) << "\n";
  else std::cout << vt::doctor::render_text(r);
  std::cout.flush();
  return r.exit_code();
}

}  // namespace vt::cli
