// The subcommands of `vramtrace`. Each cmd_*.cpp adds its own subcommand(s) and options to the
// CLI11 app (add_*_command) and runs it once parsed; main.cpp only calls the list below in order
// (the order --help, the man page and the completions list them) and dispatches. Each command
// returns the process exit status (usage.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

#include "report_render.h"
#include "symbolizer.h"
#include "torch_snapshot.h"

namespace vt::analyzer {
struct JobReport;  // report_model.h
}

namespace vt::cli {

// What argv held beyond what CLI11 parses: for `run`, everything after the first "--".
struct Invocation {
  std::vector<std::string> after_dashes;
  bool dashes = false;  // argv had that "--"
};

// One subcommand: its CLI11 node, and what runs when it is the one given.
struct Command {
  CLI::App* app = nullptr;
  std::function<int(const Invocation&)> run;
  bool analyzes = true;  // reads traces (main then ignores SIGXFSZ and names a trace that shrank); false for run
};
using Commands = std::vector<Command>;

// The registrations, one per cmd_*.cpp, in the order they are listed.
void add_run_command(CLI::App& app, Commands& out);      // cmd_run.cpp
void add_dump_commands(CLI::App& app, Commands& out);    // cmd_dump.cpp: dump, info
void add_export_command(CLI::App& app, Commands& out);   // cmd_export.cpp: --perfetto, --folded, --torch-snapshot
void add_report_commands(CLI::App& app, Commands& out);  // cmd_report.cpp: report, peak, leaks, oom, frag, summary
void add_check_command(CLI::App& app, Commands& out);    // cmd_check.cpp
void add_diff_command(CLI::App& app, Commands& out);     // cmd_diff.cpp
void add_top_command(CLI::App& app, Commands& out);      // cmd_top.cpp
void add_doctor_command(CLI::App& app, Commands& out);   // cmd_doctor.cpp
void add_whatif_command(CLI::App& app, Commands& out);   // cmd_whatif.cpp
void add_fit_command(CLI::App& app, Commands& out);      // cmd_fit.cpp
inline constexpr void (*kCommandList[])(CLI::App&, Commands&) = {
    add_run_command,  add_dump_commands,  add_export_command, add_report_commands, add_check_command,
    add_diff_command, add_whatif_command, add_fit_command,    add_top_command,     add_doctor_command,
};

struct RunOptions {
  std::string output;  // file, pattern or directory; empty = current directory
  std::vector<std::string> command;
  bool no_kernels = false;  // --no-kernels: VRAMTRACE_KERNELS=0 for the whole run
  bool no_cupti_memory = false;  // --no-cupti-memory: VRAMTRACE_CUPTI_MEMORY=0
  bool audit = false;            // --audit: LD_AUDIT=libvramtrace_audit.so (beside the library)
};
// The program's exit status (128 + N when signal N killed it: *killed_by_signal gets N, else 0).
int run_command(const RunOptions& opt, int* killed_by_signal);
// The program was killed by `sig`: so are we, once everything is said and cleaned up, so that a
// shell or a parent sees "killed by SIGSEGV", not "exited 139" (the program dumped its own core;
// we leave none). Returns only for a signal whose default action does not end a process.
void die_like_the_child(int sig);

struct DumpOptions {
  bool with_meta = false;
  bool stacks = true;
  std::string sysroot;
  std::vector<std::string> debug_dirs;
};
int dump_command(const std::string& trace, const DumpOptions& opt);
int info_command(const std::string& trace);

struct ReportOptions {
  std::string input;    // a trace or a directory of traces
  analyzer::Sections sections = analyzer::Sections::whole();  // `report`: all; `peak`, `leaks`, ...: one
  std::string format = "text";
  std::string output;   // file; empty = stdout
  size_t top = 10;
  std::string sysroot;
  std::vector<std::string> debug_dirs;
  bool native = false;  // --native: every frame (else the user's frames first, machinery folded)
  unsigned jobs = 0;    // -j: traces of a directory analysed at once; 0 = one per online CPU
  std::string at;  // --at: the live set at this time since the start ("12.5s", "250ms")
};
int report_command(const ReportOptions& opt);
// `vramtrace summary TRACE|DIR`: one screen per trace (analyzer/render/report_summary.cpp); the options
// of report but --at and --format html.
int summary_command(const ReportOptions& opt);

// "12.5s", "250ms", "900us", "1500ns", "2m", "1h", "12.5" (seconds): nanoseconds. False with a
// reason for anything else (a negative time, an unknown unit).
bool parse_time(const std::string& text, int64_t* ns, std::string* why);

// `vramtrace export --folded OUT TRACE [--leaks]`: the peak's (or the leaks') stacks in the
// folded format of flame graph tools (analyzer/export/folded.h). OUT "-" is stdout.
struct ExportOptions {
  std::string input;
  std::string output;
  bool leaks = false;
  bool driver = false;  // the peak: the driver's allocations, not PyTorch's tensors (folded.h)
  size_t top = 1000;  // groups: a flame graph wants more than a report lists
  std::string sysroot;
  std::vector<std::string> debug_dirs;
  bool native = false;
};
int export_command(const ExportOptions& opt);
// `vramtrace export --torch-snapshot OUT TRACE` (cmd_torch_snapshot.cpp): a trace, or a job
// directory into the directory OUT, one pickle per trace.
int torch_snapshot_command(const std::string& input, const std::string& output, const analyzer::TorchSnapshotOptions& opt);

struct CheckOptions {
  std::vector<std::string> inputs;  // one trace or directory; 2-3 runs with --predict-batch
  std::string max_peak, max_leak, baseline;
  std::string predict_batches;  // --predict-batch: the runs' batch sizes (analyzer/whatif/fit.h)
  double predict_target = 0;    // --predict-target: the batch judged
  std::string max_allocated, max_reserved;  // PyTorch's peaks (max_memory_allocated / _reserved)
  bool no_oom = false, json = false;
  bool allow_damaged = false;  // --allow-damaged: judge damaged traces on what could be read
  double max_peak_growth = -1, max_site_growth = -1;  // percent; -1 = not set
  double max_allocated_growth = -1, max_reserved_growth = -1;
};
int check_command(const CheckOptions& opt);
struct DiffOptions {
  std::string base, now;
  std::string format = "text";
  std::string output;  // file; empty = stdout
  size_t top = 0;      // call sites listed; 0 = text 30, JSON all
  bool native = false;  // --native: sites by every frame (else the user's frames)
};
int diff_command(const DiffOptions& opt);
int top_command(double interval, bool once);

// A trace reader's notes on stderr, one line each; those that mean lost records ("damage") say
// "damaged" as report and check do.
void name_problems(const std::string& path, const std::vector<std::string>& problems,
                   const std::vector<std::string>& damage);

// `text` (its pieces one after another) to stdout ("-") or to the file `path`, the output the user
// named (analyzer/io/output_file.h: a file is replaced only once all of it was written, an input
// or a trace is never overwritten); one error line and kExitUsage when it cannot be written.
int write_out(const std::vector<std::string_view>& text, const std::string& path,
              const std::vector<std::string>& inputs, bool follow_symlink = true);

// "vramtrace: <msg>" on stderr, escaped for a terminal (messages quote paths and trace strings).
void error_line(const std::string& msg);
// Symbolizer options whose warnings (a module file missing, another build) are "vramtrace:
// warning: ..." lines on stderr, each once per command, at most 5 (then one line saying more).
analyzer::SymbolizerOptions symbol_options(const std::string& sysroot, const std::vector<std::string>& debug_dirs);

// One error line per damaged or unreadable trace of `job` (analysis.h, job_problems).
void name_damage(const analyzer::JobReport& job);

}  // namespace vt::cli
