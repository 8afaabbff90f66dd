// The OOM verdicts as data: one row per cause a failure can be blamed on, with its code (the
// reports' `verdict`), its label (the HTML page's words) and, for each of the two judges (the
// driver-level one, oom_verdict.cpp, and PyTorch's, torch_verdict.cpp), the rule that scores it
// with its evidence and the remedies worded when it wins. A new verdict is one row in
// verdicts.cpp and its line in docs/metrics.md (tests/unit/verdict_table_test.cpp checks both).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "oom_facts.h"

namespace vt::analyzer {

template <class Facts>
struct VerdictRule {
  // The cause as this judge sees it (score, summary, evidence), or nothing when its condition
  // does not hold; null when this judge never names it.
  std::optional<Cause> (*cause)(const Facts&) = nullptr;
  // The remedies when it is the verdict (the user's lines, the settings in PyTorch's syntax).
  std::vector<std::string> (*remedies)(const Facts&) = nullptr;
};

struct Verdict {
  const char* code;
  const char* label;  // a few words, as the HTML page shows it beside the code
  VerdictRule<DriverFacts> driver;
  VerdictRule<TorchFacts> torch;
};

// Every verdict, in the order the judges consider them: a tie in score goes to the earlier row.
const std::vector<Verdict>& verdicts();

// The row of `code`, null when there is none.
const Verdict* find_verdict(const std::string& code);

// Ranks `causes` by score (ties: table order, as they were collected) and sets o.causes and o.verdict.
void rank_causes(std::vector<Cause> causes, OomReport& o);

}  // namespace vt::analyzer
