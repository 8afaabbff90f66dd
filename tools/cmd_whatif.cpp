// `vramtrace whatif TRACE --alloc-conf SETTINGS [--alloc-conf ...] [--sweep] [--device N]
// [--device-memory SIZE] [--memory-fraction F] [--format text|json] [-o FILE]`: the run's PyTorch
// block requests replayed under other allocator settings (analyzer/whatif/whatif.h), beside the
// recorded run. Each --alloc-conf is parsed as PyTorch parses PYTORCH_CUDA_ALLOC_CONF: one that
// PyTorch would refuse is one error line, before the trace is read.
#include <memory>

#include <CLI/CLI.hpp>

#include "byte_size.h"
#include "commands.h"
#include "terminal_escape.h"
#include "usage.h"
#include "whatif.h"
#include "whatif_render.h"

namespace vt::cli {

namespace {

struct WhatifArgs {
  std::string trace;
  std::vector<std::string> confs;
  bool sweep = false;
  int device = -1;
  std::string device_memory;
  double memory_fraction = 0;
  std::string format = "text";
  std::string output;
  std::string sysroot;
  std::vector<std::string> debug_dirs;
};

int whatif_command(const WhatifArgs& a) {
  if (a.format != "text" && a.format != "json") {
    error_line("--format must be text or json, not '" + a.format + "'");
    return kExitUsage;
  }
  std::vector<std::string> confs = a.confs;
  if (a.sweep)
    for (const std::string& s : analyzer::whatif_sweep_settings())
      if (std::find(confs.begin(), confs.end(), s) == confs.end()) confs.push_back(s);
  if (confs.empty()) {
    error_line("whatif: give the settings to try (--alloc-conf \"expandable_segments:True\"), or --sweep for the usual remedies");
    return kExitUsage;
  }
  analyzer::WhatifOptions opt;
  for (const std::string& c : confs) {
    analyzer::AllocConf parsed;
    std::string err;
    if (!analyzer::parse_alloc_conf(c, &parsed, &err)) {
      error_line("--alloc-conf: " + err);
      return kExitUsage;
    }
    opt.settings.push_back(parsed);
  }
  if (!a.device_memory.empty()) {
    std::string why;
    if (!parse_bytes(a.device_memory, &opt.device_memory, &why) || opt.device_memory == 0) {
      error_line("--device-memory: " + (why.empty() ? std::string("must be more than 0 bytes") : why));
      return kExitUsage;
    }
  }
  opt.device = a.device;
  opt.memory_fraction = a.memory_fraction;
  opt.symbolizer = symbol_options(a.sysroot, a.debug_dirs);
  analyzer::WhatifReport rep;
  std::string err;
  if (!analyzer::run_whatif(a.trace, opt, &rep, &err)) {
    error_line(err);
    return kExitUsage;
  }
  name_problems(a.trace, rep.problems, {});
  std::string text = a.format == "json" ? analyzer::json_text(analyzer::whatif_json(rep), 2) + "\n" : analyzer::whatif_text(rep);
  return write_out({text}, a.output.empty() ? "-" : a.output, {a.trace});
}

}  // namespace

void add_whatif_command(CLI::App& app, Commands& out) {
  auto a = std::make_shared<WhatifArgs>();
  CLI::App* c = app.add_subcommand("whatif", "replay a PyTorch run under other allocator settings (PYTORCH_CUDA_ALLOC_CONF)");
  c->add_option("trace", a->trace, "a trace of a PyTorch run")->required();
  c->add_option("--alloc-conf", a->confs, "settings to try, as PYTORCH_CUDA_ALLOC_CONF (repeatable)")->check(not_empty());
  c->add_flag("--sweep", a->sweep, "try the usual remedies and rank them");
  c->add_option("--device", a->device, "the device to replay (default: the one that ran out of memory, else the busiest)")
      ->check(CLI::Range(0, 127));
  c->add_option("--device-memory", a->device_memory, "the device's memory (default: the recorded device's), e.g. 80GiB")
      ->check(not_empty());
  c->add_option("--memory-fraction", a->memory_fraction,
                "torch.cuda.set_per_process_memory_fraction in the replay (what garbage_collection_threshold needs)")
      ->check(finite_in(0.000001, 1.0));
  c->add_option("--format", a->format, "text or json")->capture_default_str();
  c->add_option("-o,--output", a->output, "write to this file instead of stdout");
  c->add_option("--sysroot", a->sysroot, "look for the traced binaries under this directory");
  c->add_option("--debug-dir", a->debug_dirs, "a directory of separate debug files (repeatable)");
  out.push_back({c, [a](const Invocation&) { return whatif_command(*a); }});
}

}  // namespace vt::cli
