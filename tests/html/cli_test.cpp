// `vramtrace report --format html` and `vramtrace export --folded` end to end, on traces of the
// simulated driver: the page embeds the JSON report itself (a trace's and a job's), the folded
// lines add up to the peak or the leaks, and bad input is one line and a non-zero exit.
// Built into e2e_tests (it uses tests/e2e/harness.h).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../e2e/harness.h"

using nlohmann::json;

namespace {

e2e::Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), e2e::cli());
  e2e::Spec s{args, {}};
  s.preload = false;
  return e2e::run(s);
}

std::string leak_trace(const std::string& dir) {
  e2e::Result r = e2e::run({{e2e::program("oom_scenarios"), "leak"}, {{"VRAMTRACE_OUTPUT", dir}, {"FAKECUDA_TOTAL_BYTES", "4GiB"}}});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  return files[0];
}

std::string read_file(const std::string& path) {
  FILE* f = fopen(path.c_str(), "rb");
  REQUIRE(f);
  std::string s;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  fclose(f);
  return s;
}

json page_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"vt-data\">";
  size_t a = html.find(open);
  REQUIRE(a != std::string::npos);
  a += open.size();
  return json::parse(html.substr(a, html.find("</script>", a) - a));
}

uint64_t folded_sum(const std::string& text, size_t* lines) {
  std::istringstream in(text);
  std::string line;
  uint64_t sum = 0;
  *lines = 0;
  while (std::getline(in, line)) {
    size_t sp = line.rfind(' ');
    REQUIRE(sp != std::string::npos);
    sum += std::stoull(line.substr(sp + 1));
    ++*lines;
  }
  return sum;
}

}  // namespace

TEST_CASE("report --format html writes a page with the report's figures") {
  std::string dir = e2e::temp_dir();
  std::string trace = leak_trace(dir);
  e2e::Result r = cli({"report", trace, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  json rep = json::parse(r.out);

  std::string out = e2e::temp_dir() + "/report.html";
  r = cli({"report", trace, "--format", "html", "-o", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::string html = read_file(out);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  // The page embeds the report JSON itself (nothing here reaches the page's limits).
  json d = page_data(html);
  CHECK(d.at("ooms").at(0).at("verdict") == "leak_growth");
  CHECK(d.at("omitted").empty());
  d.erase("omitted");
  CHECK(d == rep);

  // A directory is a job page: the job report JSON.
  r = cli({"report", dir, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  json job_rep = json::parse(r.out);
  r = cli({"report", dir, "--format", "html"});
  REQUIRE(r.exit_code == 0);
  json job = page_data(r.out);
  CHECK(job.at("ranks").size() == 1);
  job.erase("omitted");
  CHECK(job == job_rep);
}

TEST_CASE("export --folded: the peak's and the leaks' stacks add up") {
  std::string trace = leak_trace(e2e::temp_dir());
  e2e::Result r = cli({"report", trace, "--format", "json"});
  REQUIRE(r.exit_code == 0);
  json rep = json::parse(r.out);

  r = cli({"export", "--folded", "-", trace});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  size_t lines = 0;
  CHECK(folded_sum(r.out, &lines) == rep["peak"]["bytes"].get<uint64_t>());
  CHECK(lines >= 2);
  CHECK(r.out.find("keep_history") != std::string::npos);

  std::string out = e2e::temp_dir() + "/leaks.folded";
  r = cli({"export", "--folded", out, "--leaks", "--native", trace});
  REQUIRE(r.exit_code == 0);
  CHECK(folded_sum(read_file(out), &lines) == rep["leaks"]["bytes"].get<uint64_t>());
  // Outermost frame first: with --native every stack of this program starts at _start...
  CHECK(read_file(out).rfind("_start", 0) == 0);
  // ...and by default libc's start-up frames are left out, the bytes still add up.
  r = cli({"export", "--folded", out, "--leaks", trace});
  REQUIRE(r.exit_code == 0);
  CHECK(folded_sum(read_file(out), &lines) == rep["leaks"]["bytes"].get<uint64_t>());
  CHECK(read_file(out).find("_start") == std::string::npos);
  CHECK(read_file(out).find("__libc_start") == std::string::npos);
}

TEST_CASE("export: bad input is one line and a non-zero exit") {
  e2e::Result r = cli({"export", "--folded", "-", "/nonexistent.trace"});
  CHECK(r.exit_code == 2);
  CHECK(e2e::lines(r.err).size() == 1);
  r = cli({"export", "/nonexistent.trace"});
  CHECK(r.exit_code == 2);  // --folded is required
}

TEST_CASE("report and export: an output that cannot be written is one line and exit 2, and '-' is stdout") {
  std::string dir = e2e::temp_dir();
  std::string trace = leak_trace(dir);
  for (std::vector<std::string> args : {std::vector<std::string>{"report", trace, "-o", dir + "/no/such/dir/r.txt"},
                                        std::vector<std::string>{"export", "--folded", dir + "/no/such/dir/f.txt", trace}}) {
    e2e::Result r = cli(args);
    INFO(r.err);
    CHECK(r.exit_code == 2);
    REQUIRE(e2e::lines(r.err).size() == 1);
    CHECK(r.err.find("cannot write " + dir + "/no/such/dir/") != std::string::npos);
  }
  e2e::Result r = cli({"report", trace, "--format", "json", "-o", "-"});
  CHECK(r.exit_code == 0);
  CHECK(json::parse(r.out).contains("peak"));
}
