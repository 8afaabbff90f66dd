// An output written in pieces (analyzer/io/output_file.h) is their concatenation, whatever their
// sizes against the output's buffer (a large piece bypasses it), and a failed write is an error;
// a job's JSON in pieces (job/job_json_text.h) is byte for byte json_text(job_json(job), 2).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "job_json_text.h"
#include "output_file.h"
#include "report_render.h"
#include "terminal_escape.h"

using namespace vt::analyzer;

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string joined(const std::vector<std::string>& pieces) {
  std::string all;
  for (const std::string& p : pieces) all += p;
  return all;
}

}  // namespace

TEST_CASE("write_output: pieces of any size, in order, are the file's contents") {
  char dir[] = "/tmp/vt-pieces-XXXXXX";
  REQUIRE(mkdtemp(dir));
  const std::string path = std::string(dir) + "/out.json";
  std::mt19937 rng(11);
  // Around the 1 MiB buffer and half of it (where a piece stops being copied through it).
  const size_t sizes[] = {0, 1, 7, (1 << 19) - 1, 1 << 19, (1 << 19) + 1, (1 << 20) - 1, 1 << 20, 3 << 20};
  for (int round = 0; round < 12; ++round) {
    std::vector<std::string> pieces;
    for (int n = 1 + int(rng() % 5); n > 0; --n) {
      std::string p(sizes[rng() % std::size(sizes)], '\0');
      for (char& c : p) c = char('a' + rng() % 26);
      pieces.push_back(std::move(p));
    }
    std::string error;
    REQUIRE(write_output(std::vector<std::string_view>(pieces.begin(), pieces.end()), path, {}, &error));
    INFO("round " << round << ", " << pieces.size() << " pieces");
    REQUIRE(read_all(path) == joined(pieces));
  }
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("write_output: a large piece that cannot be written is an error, as a small one is") {
  for (size_t size : {size_t(100), size_t(4) << 20}) {
    std::string piece(size, 'x'), error;
    INFO(size << " bytes");
    REQUIRE_FALSE(write_output({std::string_view("{"), piece}, "/dev/full", {}, &error));
    REQUIRE(error == "cannot write /dev/full: No space left on device");
  }
}

TEST_CASE("a job's JSON in pieces is the whole job's JSON text, rendered by the workers or not") {
  auto make_job = [] {
    JobReport job;
    // Paths that look like the slot the reports go in: quoted, they cannot be mistaken for it.
    const char* paths[] = {"a/rank0.trace", "b/\"reports\": [].trace", "c/rank2 \"reports\": []\n.trace"};
    for (int i = 0; i < 3; ++i) {
      TraceReport t;
      t.path = paths[i];
      t.process.rank = i;
      t.process.pid = 100 + i;
      if (i == 1) t.damage = {"chunk 3: cut short"};
      job.traces.push_back(t);
      job.ranks.push_back(rank_row(t));
    }
    job_totals(&job);
    return job;
  };
  const std::string whole = json_text(job_json(make_job()), 2);
  for (unsigned jobs : {1u, 2u}) {
    JobReport job = make_job();
    INFO("written here on " << jobs << " threads");
    REQUIRE(joined(job_json_text(job, Sections::whole(), jobs)) == whole);
  }
  JobReport job = make_job();
  for (const TraceReport& t : job.traces) job.rendered.push_back(job_json_part(t, Sections::whole()));
  REQUIRE(joined(job_json_text(job, Sections::whole(), 1)) == whole);
  REQUIRE(job.rendered.empty());  // moved out: the text is not held twice
  JobReport none;
  REQUIRE(joined(job_json_text(none, Sections::whole(), 2)) == json_text(job_json(none), 2));
}
