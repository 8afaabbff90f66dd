// What the end-to-end tests of one program's figures share (graph_test, sharing_test,
// context_test): run a test program that prints "name value" lines under vramtrace, then read
// the report of the one trace it wrote, to compare the two.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace e2e {

struct FigureRun {
  std::string trace;                        // the one trace it wrote
  std::map<std::string, uint64_t> figures;  // its "name value" lines
};
// Runs argv under libvramtrace.so (env added to VRAMTRACE_OUTPUT); fails the test unless it
// exits 0 with exactly one trace.
FigureRun run_figures(const std::vector<std::string>& argv, std::vector<std::pair<std::string, std::string>> env = {});

// `vramtrace COMMAND TRACE --format json` (COMMAND: report, summary...), not traced itself;
// fails the test on a non-zero exit.
nlohmann::json cli_json(const std::string& trace, const std::string& command = "report");
// `vramtrace report TRACE`, the text.
std::string cli_text(const std::string& trace);

// How many events of the trace are `op`.
size_t count_op(const Trace& t, const std::string& op);

}  // namespace e2e
