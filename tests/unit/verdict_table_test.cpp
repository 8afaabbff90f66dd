// The verdict table (analyzer/judge/verdicts.cpp) is the one place a verdict is defined: every row has a
// label and, for each judge that can name it, both a rule and remedies; the HTML page carries every
// label; docs/metrics.md lists the codes and labels in the table's order, and its two score tables
// (the driver-level judge's, then PyTorch's) consider the codes each judge has, in that order.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "report_html.h"
#include "verdicts.h"

using namespace vt::analyzer;

namespace {

std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> r;
  size_t i = 1;
  while (i < line.size()) {
    size_t j = line.find('|', i);
    if (j == std::string::npos) break;
    std::string c = line.substr(i, j - i);
    size_t b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
    r.push_back(b == std::string::npos ? "" : c.substr(b, e - b + 1));
    i = j + 1;
  }
  return r;
}

// The rows of each table of docs/metrics.md whose header is `header`, table by table.
std::vector<std::vector<std::vector<std::string>>> tables(const std::vector<std::string>& header) {
  std::ifstream in(VT_SOURCE_DIR "/docs/metrics.md");
  REQUIRE(in.good());
  std::vector<std::vector<std::vector<std::string>>> out;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '|') {
      inside = false;
      continue;
    }
    std::vector<std::string> c = cells(line);
    if (c == header) {
      out.emplace_back();
      inside = true;
      std::getline(in, line);  // |---|
      continue;
    }
    if (inside) out.back().push_back(c);
  }
  return out;
}

std::string code_cell(const char* code) { return std::string("`") + code + "`"; }

// A score table's codes, consecutive repeats (one code, two conditions) once.
std::vector<std::string> codes_of(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::string> codes;
  for (const auto& r : rows)
    if (!r.empty() && (codes.empty() || codes.back() != r[0])) codes.push_back(r[0]);
  return codes;
}

}  // namespace

TEST_CASE("verdicts: every row has a code, a label, and remedies wherever a judge can name it") {
  std::set<std::string> seen;
  for (const Verdict& v : verdicts()) {
    INFO(v.code);
    CHECK(std::string(v.code).size() > 0);
    CHECK(std::string(v.label).size() > 0);
    CHECK(seen.insert(v.code).second);
    CHECK((v.driver.cause || v.torch.cause));
    CHECK(!v.driver.cause == !v.driver.remedies);
    CHECK(!v.torch.cause == !v.torch.remedies);
    CHECK(find_verdict(v.code) == &v);
  }
  CHECK(find_verdict("no_such_verdict") == nullptr);
}

TEST_CASE("verdicts: the HTML page carries every label, from the table") {
  TraceReport r;
  const std::string page = report_html(r);
  for (const Verdict& v : verdicts()) {
    INFO(v.code);
    CHECK(page.find(std::string("\"") + v.code + "\":\"" + v.label + "\"") != std::string::npos);
  }
}

TEST_CASE("docs: metrics.md lists the verdicts, their labels and each judge's order as the table has them") {
  std::vector<std::vector<std::string>> want_labels;
  std::vector<std::string> driver, torch;
  for (const Verdict& v : verdicts()) {
    want_labels.push_back({code_cell(v.code), v.label});
    if (v.driver.cause) driver.push_back(code_cell(v.code));
    if (v.torch.cause) torch.push_back(code_cell(v.code));
  }
  auto labels = tables({"code", "label"});
  REQUIRE(labels.size() == 1);
  CHECK(labels[0] == want_labels);
  auto scores = tables({"code", "when considered", "score"});
  REQUIRE(scores.size() == 2);
  CHECK(codes_of(scores[0]) == driver);
  CHECK(codes_of(scores[1]) == torch);
}
