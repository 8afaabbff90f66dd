// `vramtrace export TRACE` in its three formats: --perfetto OUT.json (Chrome trace-event JSON,
// analyzer/export/perfetto_export.h), --folded OUT (flame graph stacks of the peak or the leaks,
// analyzer/export/folded.h) and --torch-snapshot OUT.pickle (PyTorch's memory snapshot,
// cmd_torch_snapshot.cpp). Each format's own options are refused with another format.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "analysis.h"
#include "commands.h"
#include "folded.h"
#include "perfetto_export.h"
#include "torch_snapshot.h"
#include "usage.h"

namespace vt::cli {

namespace {

struct ExportChoice {
  std::string trace;
  ExportOptions folded;  // --folded
  analyzer::PerfettoOptions perfetto;
  std::string perfetto_out;
  double counter_us = 100, min_slice_us = 0;
  bool no_stacks = false;
  std::string snapshot_out;  // --torch-snapshot
  bool torch_only = false;
  std::string snapshot_stacks = "all";
};

int perfetto_export(ExportChoice& x) {
  analyzer::PerfettoOptions& p = x.perfetto;
  p.counter_interval_ns = uint64_t(x.counter_us * 1000);
  p.min_slice_ns = uint64_t(x.min_slice_us * 1000);
  p.stacks = !x.no_stacks;
  p.symbolizer.warn = symbol_options("", {}).warn;
  std::string err;
  analyzer::PerfettoStats stats;
  int rc = analyzer::export_perfetto_file(x.trace, x.perfetto_out, p, &err, &stats);
  name_problems(x.trace, stats.problems, stats.damage);  // (as every other command does)
  if (rc) error_line(err);
  return rc ? kExitUsage : kExitOk;
}

int run_export(CLI::App* c, ExportChoice& x) {
  for (const char* o : {"--torch-only", "--stacks"})
    if (c->count(o) && x.snapshot_out.empty()) {
      error_line(std::string("export: ") + o + " is an option of --torch-snapshot");
      return kExitUsage;
    }
  if (!x.snapshot_out.empty()) {
    for (const char* o : {"--counter-interval-us", "--alloc-threshold", "--min-slice-us", "--no-stacks", "--leaks", "--native",
                          "--top", "--driver"})
      if (c->count(o)) {
        error_line(std::string("export: ") + o + " is not an option of --torch-snapshot");
        return kExitUsage;
      }
    analyzer::TorchSnapshotOptions snap;
    snap.torch_only = x.torch_only;
    snap.native = x.snapshot_stacks == "all";
    snap.symbolizer = x.perfetto.symbolizer;
    snap.symbolizer.warn = symbol_options("", {}).warn;
    return torch_snapshot_command(x.trace, x.snapshot_out, snap);
  }
  // Each format's own options, refused with the other (they would be ignored).
  const bool folded = !x.folded.output.empty();
  for (const char* o : folded ? std::vector<const char*>{"--counter-interval-us", "--alloc-threshold", "--min-slice-us", "--no-stacks"}
                              : std::vector<const char*>{"--leaks", "--native", "--top", "--driver"})
    if (c->count(o)) {
      error_line(std::string("export: ") + o + " is an option of " + (folded ? "--perfetto" : "--folded"));
      return kExitUsage;
    }
  if (folded) {
    x.folded.input = x.trace;
    x.folded.sysroot = x.perfetto.symbolizer.sysroot;
    x.folded.debug_dirs = x.perfetto.symbolizer.debug_dirs;
    return export_command(x.folded);
  }
  if (x.perfetto_out.empty()) {
    error_line("export: say what to write: --perfetto OUT.json, --folded OUT or --torch-snapshot OUT.pickle");
    return kExitUsage;
  }
  return perfetto_export(x);
}

}  // namespace

int export_command(const ExportOptions& opt) {
  analyzer::AnalysisOptions a;
  a.top = opt.top;
  a.symbols = symbol_options(opt.sysroot, opt.debug_dirs);
  a.progress = true;
  analyzer::JobReport job;
  job.traces.resize(1);
  analyzer::TraceReport& rep = job.traces[0];
  std::string err;
  if (!analyzer::analyze_trace(opt.input, a, &rep, &err)) {
    error_line(err);
    return kExitUsage;
  }
  name_damage(job);
  return write_out({opt.leaks ? analyzer::folded_leaks(rep, opt.native) : analyzer::folded_peak(rep, opt.native, opt.driver)},
                   opt.output,
                   {opt.input});
}


void add_export_command(CLI::App& app, Commands& out) {
  auto x = std::make_shared<ExportChoice>();
  CLI::App* c = app.add_subcommand(
      "export", "convert a trace: --perfetto OUT.json (ui.perfetto.dev, chrome://tracing), --folded OUT "
                "(flamegraph.pl, speedscope) or --torch-snapshot OUT.pickle (pytorch.org/memory_viz)");
  c->add_option("trace", x->trace, "trace file (--torch-snapshot: or a job directory)")->required();
  auto* perfetto_opt = c->add_option("--perfetto", x->perfetto_out, "write Chrome trace-event JSON to this file");
  auto* folded_opt = c->add_option("--folded", x->folded.output,
                                   "write the peak's (or with --leaks the leaks') stacks, folded; - for stdout");
  perfetto_opt->excludes(folded_opt);
  auto* snapshot_opt = c->add_option(
      "--torch-snapshot", x->snapshot_out,
      "write PyTorch's memory snapshot, the pickle of torch.cuda.memory._dump_snapshot (pytorch.org/memory_viz, "
      "torch.cuda._memory_viz), every action of the run, with the process's memory outside PyTorch as segments of its own");
  snapshot_opt->excludes(perfetto_opt)->excludes(folded_opt);
  c->add_flag("--torch-only", x->torch_only, "--torch-snapshot: PyTorch's segments and blocks only");
  c->add_option("--stacks", x->snapshot_stacks,
                "--torch-snapshot: the frames of each entry, as _record_memory_history(stacks=...): all (Python, "
                "then native) or python")
      ->capture_default_str()->check(CLI::IsMember({"all", "python"}));
  auto* leaks_flag = c->add_flag("--leaks", x->folded.leaks, "--folded: the stacks of what was never freed, not the peak's live set");
  c->add_flag("--native", x->folded.native, "--folded: every frame (default: the user's frames, machinery left out)");
  c->add_flag("--driver", x->folded.driver,
              "--folded: the driver's allocations at the peak (for PyTorch: its segments), not PyTorch's tensors "
              "at its allocated peak")
      ->excludes(leaks_flag);
  c->add_option("--top", x->folded.top, "--folded: call sites (PyTorch: tensor lines) to keep (the rest is one [other sites] line)")
      ->capture_default_str()->check(CLI::Range(1, 10000000));
  c->add_option("--counter-interval-us", x->counter_us, "driver memory counters: at most the max and the last sample per interval (PyTorch's: every change)")
      ->capture_default_str()->check(finite_in(0, 1e12));
  c->add_option("--alloc-threshold", x->perfetto.alloc_threshold_bytes,
                "draw allocations and PyTorch tensors of at least this many bytes as instants (failures always)")
      ->capture_default_str()->check(count_check());
  c->add_option("--min-slice-us", x->min_slice_us, "merge kernels and copies shorter than this, per stream (0: draw all)")
      ->capture_default_str()->check(finite_in(0, 1e12));
  c->add_flag("--no-stacks", x->no_stacks, "leave the call stacks out of allocation instants");
  c->add_option("--sysroot", x->perfetto.symbolizer.sysroot, "prefix for the traced machine's library paths");
  c->add_option("--debug-dir", x->perfetto.symbolizer.debug_dirs, "directory with separate debug info (repeatable)");
  out.push_back({c, [x, c](const Invocation&) { return run_export(c, *x); }});
}

}  // namespace vt::cli
