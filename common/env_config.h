// Configuration read from the environment, once, when tracing starts (with the recorder's copy
// of the environment it was loaded with as a fallback, and relative outputs resolved against the
// directory the program started in: interpose/entry/load_environment.h). Every bad value yields
// one clear line on stderr and tracing off; nothing here can crash the traced program.
//
//   VRAMTRACE_OUTPUT   trace path or directory (default: the current directory). In a path,
//                      %p is the pid, %h the host name, %% a percent sign. A directory gets
//                      vramtrace.<pid>.trace files.
//   VRAMTRACE_SESSION  set by `vramtrace run`; recorded in each header to group a run's files.
//   VRAMTRACE_DISABLE  1 = load but record nothing.
//   VRAMTRACE_STACK_DEPTH  native frames per event (default 64, 0 = no stacks, at most 256).
//   VRAMTRACE_FREE_STACKS  1 = frees get a stack too (default 0: a free's stack is rarely read,
//                      and unwinding it cost as much as the allocation's).
//   VRAMTRACE_UNWINDER libunwind = native stacks from libunwind alone (default: vramtrace's own
//                      walk first, libunwind for the frames it does not handle; checked = both
//                      on every stack, the differences counted at exit: for tests).
//   VRAMTRACE_PYTHON   0 = no Python frames (default: on when the process runs CPython).
//   VRAMTRACE_KERNELS  0 = no kernel activity (default 1: CUPTI when a libcupti loads).
//   VRAMTRACE_CUPTI_MEMORY  0 = CUPTI does not record allocations (MEMORY2; default 1): no
//                      coverage cross-check, and no CUPTI record per stream-ordered allocation.
//   VRAMTRACE_CUPTI_LIBRARY  the libcupti to load (read by cupti/loader.cpp, default: searched).
//   VRAMTRACE_SINK     file (default) or null: hook and build events but write nothing (for
//                      measuring the hook's own cost).
#pragma once

#include <cstddef>

namespace vt {

struct Config {
  bool enabled = false;
  char path[4096] = {};      // the trace file to create (pattern already expanded)
  char session[40] = {};
  bool null_sink = false;
  int stack_depth = 64;
  bool free_stacks = false;  // VRAMTRACE_FREE_STACKS: driver-level frees unwound too
  int unwinder = 1;          // VRAMTRACE_UNWINDER: 0 libunwind, 1 ours first, 2 checked (fast_unwind.h)
  bool python = true;
  bool kernels = true;  // VRAMTRACE_KERNELS: kernel activity through CUPTI (cupti/)
  bool cupti_memory = true;  // VRAMTRACE_CUPTI_MEMORY: CUPTI's MEMORY2 allocation records
};

// Fills *out from the environment for process `pid`. Returns false (tracing off) after logging
// one line when the configuration is unusable ("vramtrace: bad VRAMTRACE_SINK 'x' (use file or
// null); tracing off"), or, given why[cap], with that line's reason there and nothing logged.
bool load_config(Config* out, long pid, char* why = nullptr, size_t why_cap = 0);

// Where load_config reads a variable: the environment at that moment, else what `fallback` gives
// for it (the recorder's copy of the environment it was loaded with: a program that emptied its
// environment before its first allocation keeps its configuration, while one that sets a
// VRAMTRACE_ variable before it still has it read). Null: the environment only.
void set_config_fallback(const char* (*fallback)(const char* name));
// The directory a relative VRAMTRACE_OUTPUT (and the default, ".") is resolved against: the one
// the program started in, not the one it moved to before its first allocation. Null: the current.
void set_config_base_dir(const char* dir);

// Expands %p, %h and %% of `pattern` into out[cap]. Returns false on an unknown escape or
// overflow, with a reason in *why.
bool expand_pattern(const char* pattern, long pid, const char* host, char* out, size_t cap,
                    const char** why);

}  // namespace vt
