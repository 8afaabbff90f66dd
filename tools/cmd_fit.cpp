// `vramtrace fit TRACE TRACE [TRACE] --batch B1,B2[,B3] [--target B] [--max-batch] [--alloc-conf S]
// [--device-memory SIZE] [--format text|json] [-o FILE]`: the peak at another batch size and the
// largest batch that fits, from short runs at a few (analyzer/whatif/fit.h).
#include <memory>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "byte_size.h"
#include "commands.h"
#include "fit.h"
#include "usage.h"

namespace vt::cli {

namespace {

struct FitArgs {
  std::vector<std::string> traces;
  std::string batches;
  double target = 0;
  bool max_batch = false;
  std::string alloc_conf;
  bool conf_given = false;
  std::string device_memory;
  std::string format = "text";
  std::string output;
};

int fit_command(const FitArgs& a) {
  if (a.format != "text" && a.format != "json") {
    error_line("--format must be text or json, not '" + a.format + "'");
    return kExitUsage;
  }
  analyzer::FitOptions opt;
  opt.traces = a.traces;
  if (!analyzer::parse_batch_sizes(a.batches, &opt.batches)) {
    error_line("--batch: the batch size of each trace, in order, e.g. --batch 8,16,32 (not '" + a.batches + "')");
    return kExitUsage;
  }
  if (opt.batches.size() != opt.traces.size()) {
    error_line("--batch gives " + std::to_string(opt.batches.size()) + " batch sizes for " +
               std::to_string(opt.traces.size()) + " traces: one each");
    return kExitUsage;
  }
  if (a.target <= 0 && !a.max_batch) {
    error_line("fit: give --target B (the batch to predict) or --max-batch (the largest that fits), or both");
    return kExitUsage;
  }
  if (a.conf_given) {
    analyzer::AllocConf c;
    std::string err;
    if (!analyzer::parse_alloc_conf(a.alloc_conf, &c, &err)) {
      error_line("--alloc-conf: " + err);
      return kExitUsage;
    }
  }
  if (!a.device_memory.empty()) {
    std::string why;
    if (!parse_bytes(a.device_memory, &opt.device_memory, &why) || opt.device_memory == 0) {
      error_line("--device-memory: " + (why.empty() ? std::string("must be more than 0 bytes") : why));
      return kExitUsage;
    }
  }
  opt.target = a.target;
  opt.max_batch = a.max_batch;
  opt.alloc_conf = a.alloc_conf;
  opt.conf_given = a.conf_given;
  opt.symbolizer = symbol_options("", {});
  analyzer::FitReport rep;
  std::string err;
  if (!analyzer::run_fit(opt, &rep, &err)) {
    error_line(err);
    return kExitUsage;
  }
  std::string text = a.format == "json" ? analyzer::fit_json(rep) : analyzer::fit_text(rep);
  return write_out({text}, a.output.empty() ? "-" : a.output, a.traces);
}

}  // namespace

void add_fit_command(CLI::App& app, Commands& out) {
  auto a = std::make_shared<FitArgs>();
  CLI::App* c = app.add_subcommand("fit", "predict the peak at another batch size from runs at a few");
  c->add_option("traces", a->traces, "two or three traces of the same script at different batch sizes")
      ->required()->expected(2, 3);
  c->add_option("--batch", a->batches, "each trace's batch size, in order: 8,16,32")->required()->check(not_empty());
  c->add_option("--target", a->target, "the batch size to predict")->check(finite_in(0.000001, 1e9));
  c->add_flag("--max-batch", a->max_batch, "also find the largest batch size that fits the device");
  c->add_option("--alloc-conf", a->alloc_conf, "predict under these PYTORCH_CUDA_ALLOC_CONF settings (default: the runs')")
      ->each([a](const std::string&) { a->conf_given = true; });
  c->add_option("--device-memory", a->device_memory, "the device's memory (default: the recorded device's)")->check(not_empty());
  c->add_option("--format", a->format, "text or json")->capture_default_str();
  c->add_option("-o,--output", a->output, "write to this file instead of stdout");
  out.push_back({c, [a](const Invocation&) { return fit_command(*a); }});
}

}  // namespace vt::cli
