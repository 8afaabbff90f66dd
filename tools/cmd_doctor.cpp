// `vramtrace doctor [--json] [--python PY]`: the machine's check (doctor/doctor.h does the work).
#include <CLI/CLI.hpp>

#include <memory>

#include "commands.h"
#include "doctor.h"

namespace vt::cli {

void add_doctor_command(CLI::App& app, Commands& out) {
  auto doctor = std::make_shared<vt::doctor::Options>();
  CLI::App* c = app.add_subcommand(
      "doctor", "check this machine: driver, toolkits, runtimes, CUPTI, NVML, GPUs, tracing, memory settings");
  c->add_flag("--json", doctor->json, "print the report as JSON (fields: docs/doctor.md)");
  c->add_option("--python", doctor->python, "Python interpreter whose frameworks to inspect (default: python3 on PATH)");
  out.push_back({c, [doctor](const Invocation&) { return doctor_command(*doctor); }});
}

}  // namespace vt::cli
