// `vramtrace dump` and `vramtrace info`: a trace as JSON lines / one JSON summary.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include "aggregators/lookups.h"
#include "analysis.h"
#include "commands.h"
#include "record_json.h"
#include "report_render.h"
#include "terminal_escape.h"
#include "torch_records.h"
#include "trace_reader.h"
#include "usage.h"

namespace vt::cli {

namespace {

std::string to_line(const nlohmann::json& j) {
  return analyzer::json_text(j);
}

void report_problems(const analyzer::TraceReader& r) { name_problems(r.path(), r.problems(), r.damage()); }

// stdout could not be written (a full disk, a closed descriptor): one line, and the usage status.
int stdout_failed() {
  error_line(std::string("cannot write the output (stdout): ") + strerror(errno ? errno : EIO));
  return kExitUsage;
}

}  // namespace

void name_problems(const std::string& path, const std::vector<std::string>& problems,
                   const std::vector<std::string>& damage) {
  for (const std::string& p : problems) {
    bool lost = std::find(damage.begin(), damage.end(), p) != damage.end();
    error_line(lost ? analyzer::problem_line({path, false, p}) : path + ": " + p);
  }
}

void error_line(const std::string& msg) { std::cerr << "vramtrace: " << analyzer::terminal_escape(msg) << "\n"; }

analyzer::SymbolizerOptions symbol_options(const std::string& sysroot, const std::vector<std::string>& debug_dirs) {
  analyzer::SymbolizerOptions o{sysroot, debug_dirs, {}};
  struct stat st;
  if (!sysroot.empty() && (stat(sysroot.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    // One line for the lot: every module under it would be missing.
    error_line("warning: --sysroot " + sysroot + " is not a directory; native frames stay module+offset");
    return o;
  }
  o.warn = [](const std::string& msg) {
    static std::set<std::string> said;  // a job's traces name the same files
    if (said.size() > 5 || !said.insert(msg).second) return;
    error_line(said.size() <= 5 ? "warning: " + msg : "warning: more modules cannot be symbolized (not listed)");
  };
  return o;
}

void name_damage(const analyzer::JobReport& job) {
  for (const analyzer::TraceProblem& p : analyzer::job_problems(job)) error_line(analyzer::problem_line(p));
}

int dump_command(const std::string& trace, const DumpOptions& opt) {
  std::string err;
  auto reader = analyzer::TraceReader::open(trace, &err);
  if (!reader) {
    error_line(err);
    return kExitUsage;
  }
  if (opt.stacks) reader->load_stacks();
  analyzer::Symbolizer symbolizer(reader->stacks(), symbol_options(opt.sysroot, opt.debug_dirs));
  const auto& threads = reader->stacks().threads;
  analyzer::Record r;
  analyzer::FreedMemoryPlaces freed;
  std::string out;
  while (reader->next(&r)) {
    if (r.is_event()) {
      freed.place(&r);
      nlohmann::json j = analyzer::event_json(r);
      if (opt.stacks && r.stack) j["stack"] = analyzer::stack_json(symbolizer.stack(r.stack));
      // Threads with a Python thread state but no Python frames (autograd workers) still carry
      // their name; threads Python never saw are "native".
      auto t = threads.find(r.tid);
      if (t != threads.end()) {
        if (!t->second.name.empty()) j["thread"] = t->second.name;
        j["thread_kind"] = t->second.python ? "python" : "native";
      }
      out = to_line(j);
    } else if (uint32_t stack = 0; analyzer::is_torch_record(r.tag)) {
      // PyTorch's block layer: events in all but tag, shown like them.
      nlohmann::json j = analyzer::torch_record_json(r, &stack);
      if (opt.stacks && stack) j["stack"] = analyzer::stack_json(symbolizer.stack(stack));
      auto t = threads.find(r.tid);
      if (t != threads.end() && !t->second.name.empty()) j["thread"] = t->second.name;
      out = to_line(j);
    } else if (opt.with_meta) {
      out = to_line(analyzer::meta_json(r, reader->process().start_monotonic_ns));
    } else {
      continue;
    }
    fwrite(out.data(), 1, out.size(), stdout);
    fputc('\n', stdout);
    if (ferror(stdout)) break;
  }
  report_problems(*reader);
  errno = 0;
  if (fflush(stdout) != 0 || ferror(stdout)) return stdout_failed();
  return 0;
}

int info_command(const std::string& trace) {
  std::string err;
  auto reader = analyzer::TraceReader::open(trace, &err);
  if (!reader) {
    error_line(err);
    return kExitUsage;
  }
  analyzer::Record r;
  std::map<std::string, uint64_t> by_op;
  uint64_t events = 0, failed = 0, first = 0, last = 0;
  std::vector<std::string> notes;  // the recorder's later messages (e.g. "Python frames off: ...")
  analyzer::LookupAggregator lookups;  // what escaped the hooks, as the report says it
  while (reader->next(&r)) {
    if (!r.is_event()) {
      if (r.tag == format::kTagNote && notes.size() < 100)  // (a damaged trace may hold any number)
        notes.emplace_back(reinterpret_cast<const char*>(r.payload), r.payload_len);
      if (r.tag == format::kTagLookup) lookups.on_record(r);
      continue;
    }
    if (events++ == 0) first = r.t_ns;
    last = r.t_ns;
    by_op[r.op ? r.op->name : "unknown"]++;
    if (r.result != 0) failed++;
  }
  nlohmann::json j = analyzer::process_json(reader->process());
  j["path"] = trace;
  j["file_bytes"] = reader->file_size();
  j["record_bytes"] = reader->record_bytes();
  j["events"] = events;
  j["failed_events"] = failed;
  j["events_by_op"] = by_op;
  j["first_event_ns"] = first;
  j["last_event_ns"] = last;
  j["problems"] = reader->problems();
  // The config record: whether Python frames were captured, and why not (kTagConfig).
  int py = reader->stacks().python_status;
  j["python_frames"] = {{"status", py == 1 ? "on" : py == 2 ? "refused" : "off"},
                        {"message", reader->stacks().python_message}};
  j["notes"] = notes;
  analyzer::TraceReport lookup_view;
  lookup_view.process = reader->process();
  lookups.finish(reader->stacks(), reader->process().version_minor, &lookup_view);
  j["interception"] = analyzer::interception_json(lookup_view.interception);
  j["damage"] = reader->damage();
  errno = 0;
  std::cout << analyzer::json_text(j, 2) << "\n";
  std::cout.flush();
  report_problems(*reader);
  if (!std::cout) return stdout_failed();
  return 0;
}

void add_dump_commands(CLI::App& app, Commands& out) {
  struct Options {
    std::string trace;
    DumpOptions dump;
    bool no_stacks = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* dump = app.add_subcommand("dump", "print every event of a trace as one JSON object per line");
  dump->add_option("trace", o->trace, "trace file")->required();
  dump->add_flag("--meta", o->dump.with_meta, "also print the metadata records (process, devices, modules, threads, stacks, kernel activity, ...)");
  dump->add_flag("--no-stacks", o->no_stacks, "leave out the symbolized call stacks");
  dump->add_option("--sysroot", o->dump.sysroot, "prefix for the traced machine's library paths");
  dump->add_option("--debug-dir", o->dump.debug_dirs, "directory with separate debug info (repeatable)");
  out.push_back({dump, [o](const Invocation&) {
                   o->dump.stacks = !o->no_stacks;
                   return dump_command(o->trace, o->dump);
                 }});
  auto trace = std::make_shared<std::string>();
  CLI::App* info = app.add_subcommand("info", "print a trace's process, devices and event counts as JSON");
  info->add_option("trace", *trace, "trace file")->required();
  out.push_back({info, [trace](const Invocation&) { return info_command(*trace); }});
}

}  // namespace vt::cli
