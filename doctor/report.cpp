// See report.h. The text form is for people (grouped by section, verdict first, advice indented
// under its line); the JSON form carries the same checks plus their data, for scripts.
#include "report.h"

#include <map>

#include "terminal_escape.h"

namespace vt::doctor {

namespace {

// Sections in the order a person debugging a machine reads them: driver first, because
// nothing else works without it.
const std::vector<std::pair<std::string, std::string>>& sections() {
  static const std::vector<std::pair<std::string, std::string>> s = {
      {"driver", "CUDA driver"},
      {"toolkit", "CUDA toolkit"},
      {"python", "Python"},
      {"runtimes", "CUDA runtimes"},
      {"cupti", "CUPTI"},
      {"nvml", "NVML"},
      {"gpus", "GPUs"},
      {"tracing", "Tracing with vramtrace"},
      {"environment", "Environment variables that change GPU memory behaviour"},
  };
  return s;
}

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::ok: return "ok";
    case Verdict::info: return "info";
    case Verdict::skipped: return "skipped";
    case Verdict::warning: return "warning";
    case Verdict::problem: return "problem";
  }
  return "?";
}

Check& Report::add(std::string section, std::string id, Verdict v, std::string message, std::string advice) {
  Check c;
  c.section = std::move(section);
  c.id = std::move(id);
  c.verdict = v;
  c.message = std::move(message);
  c.advice = std::move(advice);
  checks.push_back(std::move(c));
  return checks.back();
}

int Report::exit_code() const { return overall() == Verdict::problem ? 1 : 0; }

Verdict Report::overall() const {
  Verdict worst = Verdict::ok;
  for (const Check& c : checks)
    if (c.verdict == Verdict::warning || c.verdict == Verdict::problem)
      if (c.verdict > worst) worst = c.verdict;
  return worst;
}

std::vector<const Check*> Report::find(const std::string& id) const {
  std::vector<const Check*> out;
  for (const Check& c : checks)
    if (c.id == id) out.push_back(&c);
  return out;
}

std::string render_text(const Report& r) {
  std::string out = "vramtrace doctor: can this machine run and trace CUDA programs?\n";
  out += std::string("(vramtrace ") + VT_VERSION + ")\n";
  std::map<std::string, int> counts;
  for (const auto& [key, title] : sections()) {
    bool any = false;
    for (const Check& c : r.checks) {
      if (c.section != key) continue;
      if (!any) out += "\n" + title + "\n";
      any = true;
      std::string tag = verdict_name(c.verdict);
      // Messages quote paths, environment values and other programs' output: escaped.
      out += "  " + tag + std::string(9 - tag.size(), ' ') + analyzer::terminal_escape(c.message) + "\n";
      for (const std::string& d : c.details) out += "           " + analyzer::terminal_escape(d) + "\n";
      if (!c.advice.empty()) out += "           -> " + analyzer::terminal_escape(c.advice) + "\n";
      ++counts[tag];
    }
  }
  int problems = counts["problem"], warnings = counts["warning"];
  out += "\n";
  if (problems == 0 && warnings == 0) {
    out += "Result: no problems found (exit 0)\n";
  } else {
    out += "Result: " + std::to_string(problems) + (problems == 1 ? " problem, " : " problems, ") +
           std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings") + " (exit " +
           std::to_string(r.exit_code()) + ")\n";
  }
  return out;
}

nlohmann::json render_json(const Report& r) {
  nlohmann::json counts = {{"ok", 0}, {"info", 0}, {"skipped", 0}, {"warning", 0}, {"problem", 0}};
  nlohmann::json checks = nlohmann::json::array();
  // Checks come out in section order, as in the text, so both forms read the same.
  for (const auto& section : sections()) {
    for (const Check& c : r.checks) {
      if (c.section != section.first) continue;
      counts[verdict_name(c.verdict)] = counts[verdict_name(c.verdict)].get<int>() + 1;
      checks.push_back({{"section", c.section},
                        {"id", c.id},
                        {"verdict", verdict_name(c.verdict)},
                        {"message", c.message},
                        {"advice", c.advice},
                        {"details", c.details},
                        {"data", c.data}});
    }
  }
  return {{"schema", "vramtrace.doctor/1"},
          {"vramtrace_version", VT_VERSION},
          {"verdict", verdict_name(r.overall())},
          {"exit_code", r.exit_code()},
          {"counts", counts},
          {"checks", checks}};
}

}  // namespace vt::doctor
