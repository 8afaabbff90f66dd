// See doctor.h. Runs the checks in dependency order and prints the report.
#include "doctor.h"

#include <exception>
#include <iostream>
#include <string>

#include "checks/checks.h"
#include "terminal_escape.h"

namespace vt::doctor {

Report examine(const Options& opt) {
  Facts f;
  f.options = opt;
  f.overrides = Overrides::from_env();
  Report r;
  // A surprise in one check (an answer of an unexpected shape) costs that section, not the report.
  auto guarded = [&](const char* section, void (*check)(Facts&, Report&)) {
    try {
      check(f, r);
    } catch (const std::exception& e) {
      r.add(section, std::string(section) + ".internal", Verdict::problem,
            std::string("the ") + section + " check stopped: " + e.what(), "please report this as a vramtrace bug");
    }
  };
  // NVML goes first although it prints later: when it can report free memory, the driver probe
  // need not create a context on every GPU just to ask.
  guarded("nvml", [](Facts& facts, Report&) { probe_nvml_first(facts); });
  guarded("driver", check_driver);
  guarded("toolkit", check_toolkit);
  guarded("python", check_python);
  guarded("runtimes", check_runtimes);
  guarded("cupti", check_cupti);
  guarded("nvml", check_nvml);
  guarded("gpus", check_gpus);
  guarded("tracing", check_tracing);
  guarded("environment", check_environment);
  return r;
}

}  // namespace vt::doctor

namespace vt::cli {

int doctor_command(const vt::doctor::Options& opt) {
  vt::doctor::Report r = vt::doctor::examine(opt);
  if (opt.json)
    std::cout << vt::analyzer::json_text(vt::doctor::render_json(r), 2) << "\n";
  else
    std::cout << vt::doctor::render_text(r);
  std::cout.flush();
  return r.exit_code();
}

}  // namespace vt::cli
