// Runs a job directory's per-trace analyses on several cores (`vramtrace report DIR -j N`).
// Owns only the scheduling: each trace is still analysed by analyze_trace alone, on one thread,
// into its own slot, so the job assembled afterwards (job.cpp, in path order) is byte-identical
// to the serial path whatever N is. Plain std::thread workers taking the next index from an
// atomic counter: big and small traces balance without a queue.
#pragma once

#include <cstddef>
#include <functional>

namespace vt::analyzer {

// The default for -j: the CPUs this process may run on (sched_getaffinity, so a cgroup or
// taskset limit counts), at least 1.
unsigned online_cpus();

// Calls work(i) for every i in [0, n) on min(jobs, n) threads (jobs <= 1: in order, on this
// thread). work must touch only what slot i owns.
void for_each_parallel(size_t n, unsigned jobs, const std::function<void(size_t)>& work);

// A job's traces, each in steps: replay(i) (false: nothing more for i), then symbolize(i),
// then after(i), on the worker that replayed it; then render(i) (optional) on any worker.
//
// Symbols are read once per build for the whole process (read/shared_symbols.h), but only once
// some trace has named them. The traces of a job reach their symbolization together (their
// replays take about as long), and with every worker symbolizing at once each read and inflated
// the same libraries' DWARF (a 16-rank job of bench/gen_trace: the first symbolization takes
// ~43 ms, libc's separate debug info inflated, against ~27 ms for a replay). So the workers take
// turns to symbolize: a worker whose replay ends while another symbolizes keeps its trace
// pending and replays the next one meanwhile, then symbolizes its pending traces in order (by
// then the names are shared: a fraction of a millisecond each; the libraries' opened DWARF is
// shared too, read/shared_modules.h: a worker symbolizing beside another would now wait, idle,
// on a library's lock instead of reading it again). A worker symbolizes without
// waiting for its turn when it holds kMaxPendingTraces pending traces (each keeps its stacks in
// memory) or when no trace is left to replay. after(i) (whatif runs: a replay again) is not
// taken in turns.
//
// render(i) (the trace's part of the job's output) runs once no trace is left to replay, on
// whichever worker is free, so that the workers which finish their last trace first do not wait
// for the others, idle, before the output is written.
//
// jobs <= 1: the steps of each i in order, on this thread. Each step must touch only what slot i
// owns.
struct TraceSteps {
  std::function<bool(size_t)> replay;
  std::function<void(size_t)> symbolize;
  std::function<void(size_t)> after;
  std::function<void(size_t)> render;  // may be empty
};
inline constexpr size_t kMaxPendingTraces = 4;
void for_each_trace_parallel(size_t n, unsigned jobs, const TraceSteps& steps);

}  // namespace vt::analyzer
