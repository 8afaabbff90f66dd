// The doctor's result: a list of checks, each with a verdict, a one-line message, what to do,
// and machine-readable data. Owns the verdict scale, the exit code rule and both renderings
// (the text checklist and the JSON documented in docs/doctor.md).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vt::doctor {

// Ordered by severity. info: a fact worth knowing, nothing to fix. skipped: the check could not
// run because something it needs is missing (that missing thing has its own line).
enum class Verdict { ok, info, skipped, warning, problem };
const char* verdict_name(Verdict v);

struct Check {
  std::string section;  // driver, toolkit, python, runtimes, cupti, nvml, gpus, tracing, environment
  std::string id;       // "<section>.<what>"; repeats for per-item checks (one per GPU, per library)
  Verdict verdict = Verdict::info;
  std::string message;               // one line: what was found
  std::string advice;                // what to do about it; empty when nothing
  std::vector<std::string> details;  // extra lines (processes on a GPU, allocator settings)
  nlohmann::json data = nlohmann::json::object();
};

struct Report {
  std::vector<Check> checks;

  Check& add(std::string section, std::string id, Verdict v, std::string message, std::string advice = {});
  // Exit status of `vramtrace doctor`: 1 when any check is a problem, else 0.
  int exit_code() const;
  Verdict overall() const;  // the worst verdict among ok, warning and problem
  // The checks with this id (tests and cross-check lookups).
  std::vector<const Check*> find(const std::string& id) const;
};

std::string render_text(const Report& r);
nlohmann::json render_json(const Report& r);

}  // namespace vt::doctor
