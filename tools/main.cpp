// `vramtrace`: the command line. Parses arguments (CLI11) and dispatches to a subcommand.
// Exit status: the subcommand's, following usage.h (0 ok, 1 a check failed, 2 usage or
// unreadable input; `run` passes the traced command's through).
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <tuple>
#include <vector>

#include "commands.h"
#include "output_file.h"
#include "perfetto_export.h"
#include "torch_snapshot.h"
#include "doctor.h"
#include "cli_docs.h"
#include "usage.h"

namespace {

// A finite number in [lo, hi]: CLI11's own range checks let "nan" through (and "1e300" overflows
// the conversions after them).
CLI::Validator finite_in(double lo, double hi) {
  char range[96];
  snprintf(range, sizeof range, "a number from %g to %g", lo, hi);
  std::string want = range;
  return CLI::Validator(
      [lo, hi, want](std::string& s) -> std::string {
        char* end = nullptr;
        double v = strtod(s.c_str(), &end);
        if (s.empty() || !end || *end || !std::isfinite(v) || v < lo || v > hi) return "'" + s + "' is not " + want;
        return "";
      },
      "NUMBER");
}
// A count: digits only ("-1" would wrap around to 2^64 - 1).
const CLI::Validator kCount(
    [](std::string& s) -> std::string {
      if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
        return "'" + s + "' is not a whole number (0 to 10^19)";
      return "";
    },
    "INTEGER");
// Not empty: `--max-peak "$LIMIT"` with LIMIT unset must not turn a gate off.
const CLI::Validator kNotEmpty([](std::string& s) -> std::string { return s.empty() ? "an empty value (an unset variable?)" : ""; },
                               "");

}  // namespace

int main(int argc, char** argv) {
  // The doctor's tracing self-test runs this binary again, under LD_PRELOAD, as its traced child.
  if (argc >= 2 && std::string(argv[1]) == vt::doctor::kSelfTestArg) return vt::doctor::selftest_child_main(argc, argv);
  // Named here, not from argv[0]: usage lines say `vramtrace`, not the build path.
  CLI::App app{"vramtrace: records every CUDA memory operation of a process and explains its GPU memory", "vramtrace"};
  app.formatter(std::make_shared<vt::cli::UsageFormatter>());
  app.set_version_flag("--version", vt::cli::version_line(), "print the version and exit");
  app.require_subcommand(1);

  vt::cli::RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "run a command with tracing: vramtrace run [-o PATH] -- CMD ARGS...");
  run_cmd->footer("CMD runs with libvramtrace.so preloaded; its exit status is returned (killed by the same signal when one ended it).\n"
                  "SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to vramtrace reach CMD.");
  run_cmd->add_option("-o,--output", run.output,
                      "trace file, pattern (%p = pid, %h = host) or directory (default: current directory)");
  run_cmd->add_flag("--no-kernels", run.no_kernels, "record memory only: no kernel activity (CUPTI)");
  run_cmd->add_flag("--no-cupti-memory", run.no_cupti_memory,
                    "kernels without CUPTI's allocation records (MEMORY2): VRAMTRACE_CUPTI_MEMORY=0");
  run_cmd->add_flag("--audit", run.audit,
                    "also load libvramtrace_audit.so (LD_AUDIT): libraries opened with RTLD_DEEPBIND get the hooks too");
  run_cmd->prefix_command();

  std::string trace;
  vt::cli::DumpOptions dump;
  bool no_stacks = false;
  CLI::App* dump_cmd = app.add_subcommand("dump", "print every event of a trace as one JSON object per line");
  dump_cmd->add_option("trace", trace, "trace file")->required();
  dump_cmd->add_flag("--meta", dump.with_meta, "also print the metadata records (process, devices, modules, threads, stacks, kernel activity, ...)");
  dump_cmd->add_flag("--no-stacks", no_stacks, "leave out the symbolized call stacks");
  dump_cmd->add_option("--sysroot", dump.sysroot, "prefix for the traced machine's library paths");
  dump_cmd->add_option("--debug-dir", dump.debug_dirs, "directory with separate debug info (repeatable)");

  CLI::App* info_cmd = app.add_subcommand("info", "print a trace's process, devices and event counts as JSON");
  info_cmd->add_option("trace", trace, "trace file")->required();

  vt::analyzer::PerfettoOptions perfetto;
  std::string perfetto_out;
  double counter_us = 100, min_slice_us = 0;
  vt::cli::ExportOptions exp;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "convert a trace: --perfetto OUT.json (ui.perfetto.dev, chrome://tracing), --folded OUT "
                "(flamegraph.pl, speedscope) or --torch-snapshot OUT.pickle (pytorch.org/memory_viz)");
  export_cmd->add_option("trace", trace, "trace file (--torch-snapshot: or a job directory)")->required();
  auto* perfetto_opt = export_cmd->add_option("--perfetto", perfetto_out, "write Chrome trace-event JSON to this file");
  auto* folded_opt = export_cmd->add_option("--folded", exp.output,
                                            "write the peak's (or with --leaks the leaks') stacks, folded; - for stdout");
  perfetto_opt->excludes(folded_opt);
  std::string snapshot_out;
  bool torch_only = false;
  auto* snapshot_opt = export_cmd->add_option(
      "--torch-snapshot", snapshot_out,
      "write PyTorch's memory snapshot, the pickle of torch.cuda.memory._dump_snapshot (pytorch.org/memory_viz, "
      "torch.cuda._memory_viz), every action of the run, with the process's memory outside PyTorch as segments of its own");
  snapshot_opt->excludes(perfetto_opt)->excludes(folded_opt);
  export_cmd->add_flag("--torch-only", torch_only, "--torch-snapshot: PyTorch's segments and blocks only");
  std::string snapshot_stacks = "all";
  export_cmd->add_option("--stacks", snapshot_stacks,
                         "--torch-snapshot: the frames of each entry, as _record_memory_history(stacks=...): all (Python, "
                         "then native) or python")
      ->capture_default_str()->check(CLI::IsMember({"all", "python"}));
  auto* leaks_flag = export_cmd->add_flag("--leaks", exp.leaks, "--folded: the stacks of what was never freed, not the peak's live set");
  export_cmd->add_flag("--native", exp.native, "--folded: every frame (default: the user's frames, machinery left out)");
  export_cmd->add_flag("--driver", exp.driver,
                       "--folded: the driver's allocations at the peak (for PyTorch: its segments), not PyTorch's tensors "
                       "at its allocated peak")
      ->excludes(leaks_flag);
  export_cmd->add_option("--top", exp.top, "--folded: call sites (PyTorch: tensor lines) to keep (the rest is one [other sites] line)")
      ->capture_default_str()->check(CLI::Range(1, 10000000));
  export_cmd->add_option("--counter-interval-us", counter_us, "driver memory counters: at most the max and the last sample per interval (PyTorch's: every change)")
      ->capture_default_str()->check(finite_in(0, 1e12));
  export_cmd->add_option("--alloc-threshold", perfetto.alloc_threshold_bytes,
                         "draw allocations and PyTorch tensors of at least this many bytes as instants (failures always)")
      ->capture_default_str()->check(kCount);
  export_cmd->add_option("--min-slice-us", min_slice_us, "merge kernels and copies shorter than this, per stream (0: draw all)")
      ->capture_default_str()->check(finite_in(0, 1e12));
  export_cmd->add_flag("--no-stacks", no_stacks, "leave the call stacks out of allocation instants");
  export_cmd->add_option("--sysroot", perfetto.symbolizer.sysroot, "prefix for the traced machine's library paths");
  export_cmd->add_option("--debug-dir", perfetto.symbolizer.debug_dirs, "directory with separate debug info (repeatable)");

  // report and its one-section forms share their options.
  vt::cli::ReportOptions report;
  std::vector<std::pair<CLI::App*, std::string>> report_cmds;
  for (auto [name, section, help] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"report", "", "peak, leaks, fragmentation and OOM root cause of a trace or a directory of traces"},
           {"peak", "peak", "the peak and who held it"},
           {"leaks", "leaks", "what was never freed, and what kept growing"},
           {"oom", "oom", "why each allocation failed, with remedies"},
           {"frag", "frag", "fragmentation of VMM reservations, pools and caches"}}) {
    CLI::App* c = app.add_subcommand(name, help);
    c->add_option("trace", report.input, "trace file, or a directory of traces (a job)")->required();
    c->add_option("--format", report.format, "text, json or html (a self-contained page)")->capture_default_str();
    c->add_option("--top", report.top, "groups per list")->capture_default_str()->check(CLI::Range(1, 100000));
    c->add_option("-o,--output", report.output, "write to this file instead of stdout");
    c->add_option("--sysroot", report.sysroot, "prefix for the traced machine's library paths");
    c->add_option("--debug-dir", report.debug_dirs, "directory with separate debug info (repeatable)");
    c->add_flag("--native", report.native, "show every frame (default: the user's frames first, the interpreter, FFI, "
                "dispatcher, libc and vramtrace frames folded)");
    c->add_option("-j,--jobs", report.jobs, "a directory: traces analysed at once (default: the online CPUs; 1: one by one)")
        ->check(CLI::Range(1u, 4096u));
    if (section.empty() || section == "peak")
      c->add_option("--at", report.at, "also what was live at this time since the start (12.5s, 250ms, 2m) or at a mark (mark:NAME, the first begin of the vramtrace region NAME)")
          ->check([](const std::string& v) {
            int64_t ns;
            std::string why;
            if (v.rfind("mark:", 0) == 0)
              return v.size() > 5 ? std::string() : std::string("'mark:' needs a region name (mark:NAME)");
            return vt::cli::parse_time(v, &ns, &why) ? std::string() : why + ", or mark:NAME";
          });
    report_cmds.push_back({c, section});
  }
  CLI::App* summary_cmd = app.add_subcommand(
      "summary", "one screen: peak and who held it, leaks, OOMs and verdicts, largest allocations, allocation sizes");
  summary_cmd->add_option("trace", report.input, "trace file, or a directory of traces (a job)")->required();
  summary_cmd->add_option("--format", report.format, "text or json")->capture_default_str();
  size_t summary_top = 5;
  summary_cmd->add_option("--top", summary_top, "largest allocations listed")->capture_default_str()->check(CLI::Range(1, 100000));
  summary_cmd->add_option("-o,--output", report.output, "write to this file instead of stdout");
  summary_cmd->add_option("--sysroot", report.sysroot, "prefix for the traced machine's library paths");
  summary_cmd->add_option("--debug-dir", report.debug_dirs, "directory with separate debug info (repeatable)");

  vt::cli::CheckOptions check;
  CLI::App* check_cmd = app.add_subcommand("check", "a CI gate: exit 1 when the peak, leaks, OOMs or growth break a limit");
  check_cmd->add_option("trace", check.input, "trace file, or a directory of traces")->required();
  check_cmd->add_option("--max-peak", check.max_peak,
                         "largest allowed peak of device memory as the driver saw it (e.g. 4GiB, 512MB, 1073741824); "
                         "for PyTorch: its reserved plus memory outside it")
      ->check(kNotEmpty);
  check_cmd->add_option("--max-allocated", check.max_allocated,
                        "largest allowed PyTorch peak allocated (max_memory_allocated: live tensors); exit 2 on a trace "
                        "without PyTorch's block figures")
      ->check(kNotEmpty);
  check_cmd->add_option("--max-reserved", check.max_reserved,
                        "largest allowed PyTorch peak reserved (max_memory_reserved: its cached segments); exit 2 on a "
                        "trace without PyTorch's block figures")
      ->check(kNotEmpty);
  check_cmd->add_option("--max-leak", check.max_leak,
                        "largest allowed memory left allocated at the end (for PyTorch: its tensors, not its caches)")
      ->check(kNotEmpty);
  check_cmd->add_flag("--no-oom", check.no_oom, "fail on any failed allocation");
  check_cmd->add_option("--baseline", check.baseline, "trace or directory to compare with")->check(kNotEmpty);
  check_cmd->add_option("--max-peak-growth", check.max_peak_growth, "allowed peak growth over the baseline, percent")
      ->check(finite_in(0, 1e9));
  check_cmd->add_option("--max-site-growth", check.max_site_growth, "allowed growth of any call site's peak share, percent")
      ->check(finite_in(0, 1e9));
  check_cmd->add_option("--max-allocated-growth", check.max_allocated_growth,
                        "allowed growth of PyTorch's peak allocated over the baseline, percent")
      ->check(finite_in(0, 1e9));
  check_cmd->add_option("--max-reserved-growth", check.max_reserved_growth,
                        "allowed growth of PyTorch's peak reserved over the baseline, percent")
      ->check(finite_in(0, 1e9));
  check_cmd->add_flag("--json", check.json, "print the result as JSON");
  check_cmd->add_flag("--allow-damaged", check.allow_damaged,
                      "judge damaged traces on what could be read (else a damaged or unreadable trace fails with exit 2)");

  vt::cli::DiffOptions diff;
  CLI::App* diff_cmd = app.add_subcommand("diff", "what changed between two runs, per call site");
  diff_cmd->add_option("base", diff.base, "baseline trace or directory")->required();
  diff_cmd->add_option("new", diff.now, "new trace or directory")->required();
  diff_cmd->add_option("--format", diff.format, "text or json")->capture_default_str();
  diff_cmd->add_option("--top", diff.top, "call sites listed (default: text 30, JSON all)")->check(CLI::Range(1, 100000));
  diff_cmd->add_option("-o,--output", diff.output, "write to this file instead of stdout");
  diff_cmd->add_flag("--native", diff.native, "tell sites apart by every frame (default: by the frames the report shows)");

  double top_interval = 1.0;
  bool top_once = false;
  CLI::App* top_cmd = app.add_subcommand("top", "live GPU memory per process, and the call sites of traced processes");
  top_cmd->add_option("--interval", top_interval, "seconds between refreshes")->capture_default_str()->check(finite_in(0.1, 3600));
  top_cmd->add_flag("--once", top_once, "print one snapshot and exit");

  vt::doctor::Options doctor;
  CLI::App* doctor_cmd = app.add_subcommand(
      "doctor", "check this machine: driver, toolkits, runtimes, CUPTI, NVML, GPUs, tracing, memory settings");
  doctor_cmd->add_flag("--json", doctor.json, "print the report as JSON (fields: docs/doctor.md)");
  doctor_cmd->add_option("--python", doctor.python,
                         "Python interpreter whose frameworks to inspect (default: python3 on PATH)");


  // Set after the commands, which would inherit it.
  app.footer("Exit status: 0 ok, 1 a check failed (check, doctor), 2 usage error or unreadable input; run returns "
             "the command's own.\nvramtrace COMMAND --help shows a command's options.");

  // For the build (tools/CMakeLists.txt): the man page and completions, from the definitions above.
  if (argc == 2 && std::string(argv[1]) == "--generate-man") {
    std::cout << vt::cli::man_page(app, VT_VERSION);
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "--generate-completion") {
    std::string shell = argv[2];
    if (shell != "bash" && shell != "zsh") {
      vt::cli::error_line("--generate-completion: bash or zsh, not '" + shell + "'");
      return vt::cli::kExitUsage;
    }
    std::cout << (shell == "bash" ? vt::cli::bash_completion(app) : vt::cli::zsh_completion(app));
    return 0;
  }

  // Bare `vramtrace`: the usage, as a usage error.
  if (argc < 2) {
    std::cerr << app.help();
    return vt::cli::kExitUsage;
  }
  // A mistyped subcommand is named, with the nearest one, instead of CLI11's "not expected".
  if (argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* c : app.get_subcommands({})) names.push_back(c->get_name());
    std::string typed = argv[1];
    if (std::find(names.begin(), names.end(), typed) == names.end()) {
      std::string near = vt::cli::nearest_name(typed, names);
      vt::cli::error_line("'" + typed + "' is not a vramtrace command" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
                          " (see vramtrace --help)");
      return vt::cli::kExitUsage;
    }
  }

  // For run, everything after the first "--" is the command to run, untouched by option parsing;
  // for the others "--" ends the options as usual (`report -- -odd-name.trace`).
  std::vector<std::string> after_dashes;
  int parsed_argc = argc;
  for (int i = 1; i < argc && std::string(argv[1]) == "run"; ++i) {
    if (std::string(argv[i]) == "--") {
      after_dashes.assign(argv + i + 1, argv + argc);
      parsed_argc = i;
      break;
    }
  }
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    vt::cli::error_line(e.what() + std::string(" (see vramtrace --help)"));
    return 2;
  }

  if (*run_cmd) {
    run.command = run_cmd->remaining();
    if (!run.command.empty() && run.command[0].size() > 1 && run.command[0][0] == '-') {
      vt::cli::error_line("run: unknown option " + run.command[0] + " (usage: vramtrace run [-o PATH] -- CMD ARGS...)");
      return 2;
    }
    // A `--` after the command began is the command's own argument (`run prog a -- b`).
    if (!run.command.empty() && parsed_argc < argc) run.command.push_back("--");
    run.command.insert(run.command.end(), after_dashes.begin(), after_dashes.end());
    if (run.command.empty()) {
      vt::cli::error_line("run: no command given (usage: vramtrace run [-o PATH] -- CMD ARGS...)");
      return 2;
    }
    int killed_by = 0;
    int code = vt::cli::run_command(run, &killed_by);
    if (killed_by) vt::cli::die_like_the_child(killed_by);  // (after run_command's clean-up)
    return code;
  }
  // The analyzer's commands: past a file size limit a write fails (and says so) instead of the
  // signal killing us with a partial output (not for run: the traced program inherits it).
  signal(SIGXFSZ, SIG_IGN);
  // Traces are read through mappings: one truncated or replaced by another program while it is
  // read faults (SIGBUS) where its pages were. One line, the output in progress removed, status 2.
  struct sigaction bus = {};
  bus.sa_handler = [](int) {
    static const char kLine[] =
        "vramtrace: a trace shrank while it was read (truncated or replaced by another program); stopped\n";
    ssize_t ignored = write(STDERR_FILENO, kLine, sizeof kLine - 1);
    (void)ignored;
    if (const char* temp = vt::analyzer::output_in_progress(); temp[0]) unlink(temp);
    _exit(2);
  };
  sigaction(SIGBUS, &bus, nullptr);
  if (*dump_cmd) {
    dump.stacks = !no_stacks;
    return vt::cli::dump_command(trace, dump);
  }
  if (*info_cmd) return vt::cli::info_command(trace);
  for (const char* o : {"--torch-only", "--stacks"})
    if (*export_cmd && export_cmd->count(o) && snapshot_out.empty()) {
      vt::cli::error_line(std::string("export: ") + o + " is an option of --torch-snapshot");
      return 2;
    }
  if (*export_cmd && !snapshot_out.empty()) {
    for (const char* o : {"--counter-interval-us", "--alloc-threshold", "--min-slice-us", "--no-stacks", "--leaks", "--native",
                          "--top", "--driver"})
      if (export_cmd->count(o)) {
        vt::cli::error_line(std::string("export: ") + o + " is not an option of --torch-snapshot");
        return 2;
      }
    vt::analyzer::TorchSnapshotOptions snap;
    snap.torch_only = torch_only;
    snap.native = snapshot_stacks == "all";
    snap.symbolizer = perfetto.symbolizer;
    snap.symbolizer.warn = vt::cli::symbol_options("", {}).warn;
    return vt::cli::torch_snapshot_command(trace, snapshot_out, snap);
  }
  if (*export_cmd) {  // each format's own options, refused with the other (they were ignored)
    const bool folded = !exp.output.empty();
    for (const char* o : folded ? std::vector<const char*>{"--counter-interval-us", "--alloc-threshold", "--min-slice-us", "--no-stacks"}
                                : std::vector<const char*>{"--leaks", "--native", "--top", "--driver"})
      if (export_cmd->count(o)) {
        vt::cli::error_line(std::string("export: ") + o + " is an option of " + (folded ? "--perfetto" : "--folded"));
        return 2;
      }
  }
  if (*export_cmd && !exp.output.empty()) {
    exp.input = trace;
    exp.sysroot = perfetto.symbolizer.sysroot;
    exp.debug_dirs = perfetto.symbolizer.debug_dirs;
    return vt::cli::export_command(exp);
  }
  if (*export_cmd && perfetto_out.empty()) {
    vt::cli::error_line("export: say what to write: --perfetto OUT.json, --folded OUT or --torch-snapshot OUT.pickle");
    return 2;
  }
  if (*export_cmd) {
    perfetto.counter_interval_ns = uint64_t(counter_us * 1000);
    perfetto.min_slice_ns = uint64_t(min_slice_us * 1000);
    perfetto.stacks = !no_stacks;
    perfetto.symbolizer.warn = vt::cli::symbol_options("", {}).warn;
    std::string err;
    vt::analyzer::PerfettoStats stats;
    int rc = vt::analyzer::export_perfetto_file(trace, perfetto_out, perfetto, &err, &stats);
    vt::cli::name_problems(trace, stats.problems, stats.damage);  // (as every other command does)
    if (rc) vt::cli::error_line(err);
    return rc ? vt::cli::kExitUsage : vt::cli::kExitOk;
  }
  if (*check_cmd) return vt::cli::check_command(check);
  if (*top_cmd) return vt::cli::top_command(top_interval, top_once);
  if (*doctor_cmd) return vt::cli::doctor_command(doctor);
  if (*summary_cmd) {
    report.top = summary_top;
    return vt::cli::summary_command(report);
  }
  if (*diff_cmd) return vt::cli::diff_command(diff);
  for (auto& [c, section] : report_cmds)
    if (*c) {
      report.section = section;
      return vt::cli::report_command(report);
    }
  return 2;
}
