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

}  // namespace vt::analyzer
