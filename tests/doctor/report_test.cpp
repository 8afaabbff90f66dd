// The report's two forms (text and JSON) and the helpers every check relies on: version
// arithmetic and running things in isolated children.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <set>

#include "isolate.h"
#include "sandbox.h"
#include "versions.h"

using namespace doctor_test;
using vt::doctor::Verdict;

TEST_CASE("JSON output: valid, complete, and consistent with the exit code") {
  Sandbox s;
  s.use_fake_driver(12020);
  s.use_nvml();
  s.copy("site-packages/nvidia/cu13/lib/libcudart.so.13", Sandbox::fake("cudart130/libcudart.so.13"));
  s.set_env("NCCL_BUFFSIZE", "8M");
  vt::doctor::Report r = s.run();
  nlohmann::json j = nlohmann::json::parse(vt::doctor::render_json(r).dump());  // round trip

  CHECK(j["schema"] == "vramtrace.doctor/1");
  CHECK(j["verdict"] == "problem");
  CHECK(j["exit_code"] == 1);
  const std::set<std::string> verdicts = {"ok", "info", "skipped", "warning", "problem"};
  const std::set<std::string> sections = {"driver", "toolkit", "python",  "runtimes",   "cupti",
                                          "nvml",   "gpus",    "tracing", "environment"};
  int total = 0;
  for (const auto& [name, n] : j["counts"].items()) {
    CHECK(verdicts.count(name) == 1);
    total += n.get<int>();
  }
  REQUIRE(j["checks"].size() == size_t(total));
  std::set<std::string> seen;
  for (const auto& c : j["checks"]) {
    CHECK(sections.count(c["section"].get<std::string>()) == 1);
    CHECK(c["id"].get<std::string>().rfind(c["section"].get<std::string>() + ".", 0) == 0);
    CHECK(verdicts.count(c["verdict"].get<std::string>()) == 1);
    CHECK(c["message"].is_string());
    CHECK_FALSE(c["message"].get<std::string>().empty());
    CHECK(c["advice"].is_string());
    CHECK(c["details"].is_array());
    CHECK(c["data"].is_object());
    seen.insert(c["section"].get<std::string>());
  }
  CHECK(seen == sections);             // every section speaks
  CHECK(j["counts"]["problem"] == 1);  // the 13.0 runtime on a 12.2 driver
  // Sections come out in reading order: driver first, environment last.
  CHECK(j["checks"].front()["section"] == "driver");
  CHECK(j["checks"].back()["section"] == "environment");
}

TEST_CASE("text: sections, verdicts, advice under its line, and the result") {
  vt::doctor::Report r;
  r.add("gpus", "gpus.device", Verdict::warning, "GPU 0 is busy", "free it").details = {"pid 1 x: 1.0 GiB"};
  r.add("driver", "driver.library", Verdict::ok, "libcuda.so.1 loaded");
  std::string t = vt::doctor::render_text(r);
  CHECK(t.find("CUDA driver\n  ok       libcuda.so.1 loaded\n") != std::string::npos);
  CHECK(t.find("GPUs\n  warning  GPU 0 is busy\n           pid 1 x: 1.0 GiB\n           -> free it\n") !=
        std::string::npos);
  CHECK(t.find("CUDA driver") < t.find("GPUs"));
  CHECK(t.find("Result: 0 problems, 1 warning (exit 0)") != std::string::npos);
  CHECK(r.exit_code() == 0);
  r.add("tracing", "tracing.library", Verdict::problem, "missing");
  CHECK(r.exit_code() == 1);
  CHECK(vt::doctor::render_text(r).find("Result: 1 problem, 1 warning (exit 1)") != std::string::npos);
}

TEST_CASE("CUDA version arithmetic") {
  using namespace vt::doctor;
  CHECK(cuda_version_string(12040) == "12.4");
  CHECK(cuda_version_string(13000) == "13.0");
  CHECK(cuda_version_string(0).empty());
  CHECK(parse_cuda_version("12.4.1") == 12040);
  CHECK(parse_cuda_version("13") == 13000);
  CHECK(parse_cuda_version("x") == 0);
  CHECK(version_from_file_name("libcudart.so.12") == 12000);
  CHECK(version_from_file_name("libcudart.so.11.0") == 11000);
  CHECK(version_from_file_name("libcudart-9c3f1a.so.12.4.127") == 12040);
  CHECK(version_from_file_name("libcudart.so") == 0);
  CHECK(cupti_api_to_cuda(130001) == 13000);
  CHECK(cupti_api_to_cuda(130102) == 13010);  // 13.1, CUPTI update 2
  CHECK(cupti_api_to_cuda(24) == 12060);
  CHECK(cupti_api_to_cuda(18) == 11080);
  CHECK(cupti_api_to_cuda(0) == 0);
  CHECK(driver_branch_for(12040) == "R550");
  CHECK(driver_branch_for(13000) == "R580");
  CHECK(driver_branch_for(12070) == "R560");  // between releases: the one before
}

TEST_CASE("isolated children: answers, crashes, hangs and programs that do not exist") {
  using namespace vt::doctor;
  Isolated ok = run_isolated([] { return nlohmann::json{{"answer", 42}}; }, 10);
  CHECK(ok.ok);
  CHECK(ok.value["answer"] == 42);

  Isolated crash = run_isolated(
      []() -> nlohmann::json {
        raise(SIGSEGV);
        return {};
      },
      10);
  CHECK_FALSE(crash.ok);
  CHECK(contains(crash.error, "killed by signal 11"));

  Isolated hang = run_isolated(
      []() -> nlohmann::json {
        pause();
        return {};
      },
      1);
  CHECK_FALSE(hang.ok);
  CHECK(contains(hang.error, "no answer within 1 s"));

  Isolated thrown = run_isolated([]() -> nlohmann::json { throw std::runtime_error("boom"); }, 10);
  CHECK_FALSE(thrown.ok);
  CHECK(thrown.error == "boom");

  ProgramResult p = run_program({"sh", "-c", "echo out; echo err >&2; exit 3"}, {{"X", "1"}}, 10);
  CHECK(p.started);
  CHECK(p.exit_code == 3);
  CHECK(p.out == "out\n");
  CHECK(p.err == "err\n");

  ProgramResult env =
      run_program({"sh", "-c", "printf %s \"$VT_A-${VT_B:-unset}\""}, {{"VT_A", "a"}, {"VT_B", std::nullopt}}, 10);
  CHECK(env.out == "a-unset");

  // A program that hangs after starting one of its own: the timeout kills both (the second was
  // left running, orphaned).
  std::string pidfile = "/tmp/vt-doctor-orphan." + std::to_string(getpid());
  ProgramResult hung = run_program({"sh", "-c", "sleep 300 & echo $! > " + pidfile + "; wait"}, {}, 1);
  CHECK(hung.timed_out);
  FILE* f = fopen(pidfile.c_str(), "r");
  REQUIRE(f);
  long orphan = 0;
  CHECK(fscanf(f, "%ld", &orphan) == 1);
  fclose(f);
  unlink(pidfile.c_str());
  REQUIRE(orphan > 0);
  auto dead = [](long pid) {  // gone, or a zombie no one has reaped yet
    if (kill(pid_t(pid), 0) != 0) return true;
    FILE* st = fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
    if (!st) return true;
    char state = 0;
    bool zombie = fscanf(st, "%*d %*s %c", &state) == 1 && state == 'Z';
    fclose(st);
    return zombie;
  };
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = dead(orphan);
    if (!gone) usleep(10000);
  }
  if (!gone) kill(pid_t(orphan), SIGKILL);
  CHECK(gone);

  ProgramResult missing = run_program({"/nonexistent/program"}, {}, 10);
  CHECK_FALSE(missing.started);
  CHECK(contains(missing.error, "No such file"));
}
