// The Python interpreter (--python, default python3 on PATH): does it run, and which CUDA
// frameworks does it have. It runs python_probe.py, whose answer the runtime and CUPTI checks
// use; a missing Python is not an error unless it was asked for by name.
#include "../util.h"
#include "checks.h"

namespace vt::doctor {

void check_python(Facts& f, Report& r) {
  bool explicit_python = !f.options.python.empty();
  std::string requested = explicit_python ? f.options.python : "python3";
  std::string exe = find_on_path(requested);
  if (exe.empty()) {
    Check& c = r.add("python", "python.interpreter", explicit_python ? Verdict::problem : Verdict::skipped,
                     explicit_python ? "no Python at " + requested
                                     : "no python3 on PATH: the CUDA runtimes of Python frameworks are not checked");
    if (explicit_python) c.advice = "give --python the path of an existing interpreter";
    c.data = {{"requested", requested}, {"found", false}};
    return;
  }
  f.python_executable = exe;
  ProgramResult p = run_program({exe, "-c", kPythonProbeScript}, {}, 60);
  nlohmann::json j;
  bool answered = false;
  if (p.started && !p.timed_out && p.exit_code == 0) {
    // The answer is the last line: a sitecustomize may print before it.
    std::vector<std::string> lines = split(trim(p.out), '\n');
    try {
      j = nlohmann::json::parse(lines.back());
      answered = j.is_object() && j.contains("python");
    } catch (const std::exception&) {
    }
  }
  if (!answered) {
    std::string why = !p.started ? p.error : p.timed_out ? p.error : "exit status " + std::to_string(p.exit_code);
    std::vector<std::string> err_lines = split(trim(p.err), '\n');
    if (!err_lines.empty() && !err_lines.back().empty()) why += ": " + err_lines.back();
    r.add("python", "python.interpreter", Verdict::warning, exe + " did not answer the probe (" + why + ")",
          "the doctor needs Python 3.6 or later to find framework runtimes; pass one with --python")
        .data = {{"requested", requested}, {"found", true}, {"executable", exe}, {"answered", false}};
    return;
  }
  f.python_ran = true;
  f.python_probe = j;
  f.python_executable = j["python"].value("executable", exe);
  std::string version = j["python"].value("version", std::string("?"));
  r.add("python", "python.interpreter", Verdict::ok, "Python " + version + " at " + f.python_executable).data = {
      {"requested", requested},
      {"found", true},
      {"executable", f.python_executable},
      {"answered", true},
      {"version", version}};

  const nlohmann::json& fws = j["frameworks"];
  if (fws.empty()) {
    r.add("python", "python.framework", Verdict::info, "no torch, cupy, jax or tensorflow in this Python");
    return;
  }
  for (const nlohmann::json& fw : fws) {
    std::string name = fw.value("name", std::string("?"));
    std::string msg = name;
    if (fw.contains("version") && fw["version"].is_string()) msg += " " + fw["version"].get<std::string>();
    if (fw.contains("cuda")) {
      if (fw["cuda"].is_string())
        msg += " (built for CUDA " + fw["cuda"].get<std::string>() + ")";
      else
        msg += " (a CPU-only build)";
    }
    std::string dir = fw.contains("dirs") && !fw["dirs"].empty() ? fw["dirs"][0].get<std::string>() : "";
    r.add("python", "python.framework", Verdict::info, msg + " at " + dir).data = fw;
  }
}

}  // namespace vt::doctor
