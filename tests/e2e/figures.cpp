// See figures.h.
#include "figures.h"

#include <catch2/catch.hpp>

#include <sstream>

namespace e2e {

FigureRun run_figures(const std::vector<std::string>& argv, std::vector<std::pair<std::string, std::string>> env) {
  std::string dir = temp_dir();
  env.push_back({"VRAMTRACE_OUTPUT", dir});
  Result r = run({argv, env});
  INFO(argv.at(0) << ": " << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto files = files_in(dir);
  REQUIRE(files.size() == 1);
  FigureRun run{files[0], {}};
  for (const std::string& line : lines(r.out)) {
    std::istringstream in(line);
    std::string name;
    long long v = 0;
    if (in >> name >> v) run.figures[name] = uint64_t(v);
  }
  return run;
}

namespace {
std::string cli_out(std::vector<std::string> args) {
  Spec s{std::move(args), {}};
  s.preload = false;
  Result r = run(s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return r.out;
}
}  // namespace

nlohmann::json cli_json(const std::string& trace, const std::string& command) {
  return nlohmann::json::parse(cli_out({cli(), command, trace, "--format", "json"}));
}

std::string cli_text(const std::string& trace) { return cli_out({cli(), "report", trace}); }

size_t count_op(const Trace& t, const std::string& op) {
  size_t n = 0;
  for (const std::string& o : t.ops()) n += o == op;
  return n;
}

}  // namespace e2e
