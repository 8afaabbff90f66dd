// Native frames named once per build for the whole process: every Symbolizer (one per trace)
// looks a return address up here, by its module's build-id and its offset in it, before opening
// the module and reading its DWARF, and adds what it named. The traces of a job, or a directory
// of runs of the same program, share their libraries: each was re-read and its compressed DWARF
// inflated once per trace (issue 38: 10,000 small traces took ~11 minutes). Thread-safe (the
// job's workers share it); bounded (kMaxEntries, then nothing more is added). Only frames of a
// module that was opened and matched the trace's build-id are kept; the module path and offset
// of a frame are the caller's own trace's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "symbolizer.h"

namespace vt::analyzer {

inline constexpr size_t kMaxSharedSymbols = 1 << 20;

bool shared_symbols_lookup(const std::string& build_id, uint64_t offset, std::vector<Frame>* out);
void shared_symbols_store(const std::string& build_id, uint64_t offset, const std::vector<Frame>& frames);

}  // namespace vt::analyzer
