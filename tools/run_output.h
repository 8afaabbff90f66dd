// Where `vramtrace run -o` writes, checked before the program runs (tools/cmd_run.cpp): the
// pattern's escapes, what an existing path is, the directory (created when -o ends in '/'), and
// after the run, what to say when no trace was written.
#pragma once

#include <string>
#include <vector>

namespace vt::cli {

struct RunOutput {
  std::string value;     // VRAMTRACE_OUTPUT for the program: the -o value made absolute
  std::string scan_dir;  // where the run's traces are found afterwards; empty when %p hides it
};

// Checks -o (empty = the current directory). A value ending in '/' names a directory, created
// like mkdir -p (mode 0700 for what it creates; each component created is entered with
// O_NOFOLLOW, never through a symlink swapped in). Refused with one line in *err: an unknown
// %-escape, an existing path that is neither a directory nor a regular file (/dev/full) or a
// symlink to anything but a directory, a directory that is missing (without the '/') or not
// writable.
bool prepare_output(const std::string& raw, RunOutput* out, std::string* err);

// VRAMTRACE_DISABLE is set (to anything but 0): the library loads and records nothing.
bool tracing_disabled();

// Why a finished run left no trace in `scan_dir`, as precisely as can be told from outside: a
// full file system, a file size limit too small, tracing disabled, else no CUDA memory call.
std::string no_trace_reason(const std::string& scan_dir);
// Its answer when nothing else explains it.
inline constexpr char kNoMemoryCall[] = "the program made no CUDA memory call";

}  // namespace vt::cli
