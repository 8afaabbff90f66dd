// `vramtrace top --once`: GPUs from NVML (a stand-in library here) and a traced process through
// the simulated driver, with its live bytes and top call sites.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "shm_layout.h"

namespace {

// A traced `lifecycle MODE` (hold: 5 + 3 MiB held until killed), with `env` added.
pid_t spawn_holder(const std::string& dir, const char* mode = "hold",
                   const std::vector<std::pair<const char*, const char*>>& env = {}) {
  pid_t held = fork();
  if (held == 0) {
    setenv("LD_LIBRARY_PATH", VT_FAKECUDA_DIR, 1);
    setenv("LD_PRELOAD", VT_LIBRARY, 1);
    setenv("VRAMTRACE_OUTPUT", dir.c_str(), 1);
    for (const auto& [k, v] : env) setenv(k, v, 1);
    execl(e2e::program("lifecycle").c_str(), "lifecycle", mode, (char*)nullptr);
    _exit(127);
  }
  return held;
}

}  // namespace

TEST_CASE("top --once shows GPUs, a traced process, its live bytes and call sites") {
  std::string dir = e2e::temp_dir();
  pid_t held = spawn_holder(dir);
  e2e::Spec s{{e2e::cli(), "top", "--once"},
              {{"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML}, {"FAKENVML_PROCESSES", "1:2147483648"}}};
  s.preload = false;
  std::string pid_line = "pid " + std::to_string(held) + "  ";
  // Only this holder's lines: tests running alongside may list traced processes of their own.
  auto own_section = [&](const std::string& out) {
    size_t at = out.find(pid_line);
    if (at == std::string::npos) return std::string();
    size_t end = out.find("\n  pid ", at);
    return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
  };
  e2e::Result r;
  std::string own;
  for (int i = 0; i < 100; ++i) {  // the summary is refreshed every 250 ms
    r = e2e::run(s);
    own = own_section(r.out);
    if (own.find("hold_second_site") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(held, SIGTERM);
  waitpid(held, nullptr, 0);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("GPU 0  Fake GPU (fakenvml)   used 2.00 GiB of 80.0 GiB") != std::string::npos);
  CHECK(r.out.find("pid 1  ") != std::string::npos);
  CHECK(r.out.find(pid_line) != std::string::npos);
  CHECK(own.find("device 0: 8.00 MiB live (peak 8.00 MiB)") != std::string::npos);
  CHECK(own.find("5.00 MiB  alloc(unsigned long) < main") != std::string::npos);
  CHECK(own.find("3.00 MiB  alloc(unsigned long) < hold_second_site") != std::string::npos);

  // Once it is gone, it is no longer listed.
  r = e2e::run(s);
  CHECK(r.out.find(pid_line) == std::string::npos);
}

TEST_CASE("top: a traced process whose NVML hangs in its init still publishes its live bytes and call sites") {
  std::string dir = e2e::temp_dir();
  pid_t held = spawn_holder(dir, "hold",
                            {{"VRAMTRACE_KERNELS", "0"},
                             {"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML},
                             {"FAKENVML_INIT_SLEEP_MS", "60000"}});  // NVML's loader never comes back in time
  e2e::Spec s{{e2e::cli(), "top", "--once"}, {{"VRAMTRACE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}}};
  s.preload = false;
  const std::string pid_line = "pid " + std::to_string(held) + "  ";
  std::string own;
  for (int i = 0; i < 100 && own.find("hold_second_site") == std::string::npos; ++i) {
    std::string out = e2e::run(s).out;
    size_t at = out.find(pid_line);
    own = at == std::string::npos ? "" : out.substr(at, out.find("\n  pid ", at) - at);
    if (own.find("hold_second_site") == std::string::npos) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(held, SIGTERM);
  waitpid(held, nullptr, 0);
  INFO(own);
  CHECK(own.find("device 0: 8.00 MiB live (peak 8.00 MiB)") != std::string::npos);
  CHECK(own.find("3.00 MiB  alloc(unsigned long) < hold_second_site") != std::string::npos);
}

TEST_CASE("top without NVML says so and still lists traced processes") {
  e2e::Spec s{{e2e::cli(), "top", "--once"}, {{"VRAMTRACE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}}};
  s.preload = false;
  e2e::Result r = e2e::run(s);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("NVML (libnvidia-ml.so.1) not available") != std::string::npos);
  CHECK(r.out.find("TRACED PROCESSES") != std::string::npos);
  s.argv = {e2e::cli(), "top", "--interval", "0"};
  CHECK(e2e::run(s).exit_code == 2);
}

namespace {

// A traced `lifecycle hold` (5 + 3 MiB held until killed); waits until its summary is published.
pid_t start_holder(const std::string& dir, std::string* shm_name, const char* mode = "hold") {
  pid_t held = spawn_holder(dir, mode, {{"VRAMTRACE_KERNELS", "0"}});
  *shm_name = "/dev/shm/vramtrace." + std::to_string(held);
  for (int i = 0; i < 200 && access(shm_name->c_str(), F_OK) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  return held;
}

e2e::Result top_once(bool as_nobody = false) {
  e2e::Spec s{{e2e::cli(), "top", "--once"}, {{"VRAMTRACE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}}};
  s.preload = false;
  s.timeout_s = 20;
  s.drop_privileges = as_nobody;
  return e2e::run(s);
}

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("top: a summary left by a killed process is not listed and is removed, by top or by the next traced process", "[devshm]") {
  std::string dir = e2e::temp_dir(), shm;
  pid_t held = start_holder(dir, &shm);
  REQUIRE(exists(shm));
  kill(held, SIGKILL);
  waitpid(held, nullptr, 0);
  REQUIRE(exists(shm));  // no destructor ran

  // A copy under the name of a live pid (pid reuse, or a pid of another namespace): its writer
  // is gone all the same.
  std::string reused = "/dev/shm/vramtrace." + std::to_string(getpid()) + ".7";
  REQUIRE(system(("cp " + shm + " " + reused).c_str()) == 0);
  e2e::Result r = top_once();
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_FALSE(r.timed_out);
  CHECK(r.out.find("pid " + std::to_string(held) + " ") == std::string::npos);
  CHECK(r.out.find("pid " + std::to_string(getpid()) + " ") == std::string::npos);
  CHECK_FALSE(exists(shm));
  CHECK_FALSE(exists(reused));

  // Without top: the next traced process sweeps them.
  held = start_holder(dir, &shm);
  REQUIRE(exists(shm));
  kill(held, SIGKILL);
  waitpid(held, nullptr, 0);
  REQUIRE(exists(shm));
  e2e::Result next = e2e::run({{e2e::program("lookup_direct")}, {{"VRAMTRACE_OUTPUT", dir}}});
  CHECK(next.exit_code == 0);
  CHECK_FALSE(exists(shm));
}

TEST_CASE("top: a forked child does not keep its dead parent's summary alive", "[devshm]") {
  // The child inherits the parent's mapping of the summary, and with it a hold on the writer's
  // lock, unless it drops it at fork: then the parent, killed, would still be listed.
  std::string dir = e2e::temp_dir(), shm;
  pid_t held = start_holder(dir, &shm, "hold-fork");
  REQUIRE(exists(shm));
  e2e::Result r = top_once();
  CHECK(r.out.find("pid " + std::to_string(held) + "  ") != std::string::npos);
  kill(held, SIGKILL);  // the child waits on (it dies with the parent, a moment later)
  waitpid(held, nullptr, 0);
  r = top_once();
  INFO(r.out);
  CHECK(r.out.find("pid " + std::to_string(held) + "  ") == std::string::npos);
  CHECK_FALSE(exists(shm));
}

TEST_CASE("top: hostile /dev/shm entries (another user's, empty, a FIFO, a symlink, forged) are not trusted", "[devshm]") {
  // Planted as another user (nobody) when we are root, else as ourselves: then the empty file,
  // the FIFO and the symlink must still be refused for what they are.
  bool root = geteuid() == 0;
  if (!root) WARN("not root: the planted files are our own, the other-user checks are left out");
  auto give_away = [&](const std::string& p) {
    if (root) REQUIRE(lchown(p.c_str(), 65534, 65534) == 0);
  };
  std::string base = "/dev/shm/vramtrace.99999";
  std::vector<std::string> planted;
  auto plant = [&](const std::string& suffix) {
    planted.push_back(base + suffix);
    unlink(planted.back().c_str());
    return planted.back();
  };
  std::string empty = plant("1");  // mapping it whole was a SIGBUS
  close(open(empty.c_str(), O_CREAT | O_WRONLY, 0644));
  give_away(empty);
  std::string pipe = plant("2");  // opening it blocked
  REQUIRE(mkfifo(pipe.c_str(), 0666) == 0);
  give_away(pipe);
  // A forged summary in the current layout: pid 1, 123 GiB, a path with terminal escapes.
  vt::format::ShmSummary f;
  memset(static_cast<void*>(&f), 0, sizeof f);
  memcpy(f.magic, vt::format::kShmMagic, sizeof f.magic);
  f.version = vt::format::kShmVersion;
  f.size = sizeof f;
  f.pid = 1;
  f.live[0][0] = 123ll << 30;
  snprintf(f.trace_path, sizeof f.trace_path, "/tmp/\x1b]0;owned\x07\x1b[2J.trace");
  auto write_forged = [&](const std::string& p) {
    int fd = open(p.c_str(), O_CREAT | O_WRONLY | O_EXCL, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, &f, sizeof f) == ssize_t(sizeof f));
    close(fd);
  };
  std::string forged = plant("3");
  write_forged(forged);
  give_away(forged);
  std::string link = plant("4");  // a symlink to a summary-sized file
  REQUIRE(symlink(forged.c_str(), link.c_str()) == 0);
  give_away(link);
  std::string mine = plant("5");  // the same forgery as our own: no live writer holds it
  write_forged(mine);

  for (bool nobody : root ? std::vector<bool>{false, true} : std::vector<bool>{false}) {
    if (nobody) write_forged(plant("6"));  // root's, as nobody sees it
    e2e::Result r = top_once(nobody);
    INFO((nobody ? "as nobody: " : "as caller: ") << r.out << r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("pid 1 ") == std::string::npos);
    CHECK(r.out.find("123 GiB") == std::string::npos);
    CHECK(r.out.find('\x1b') == std::string::npos);
    if (root) {
      CHECK(r.out.find(nobody ? "TRACED PROCESSES (vramtrace; user nobody)"
                              : "(vramtrace; user root, root: other users' summaries are not read)") != std::string::npos);
      CHECK(r.out.find("of other users not shown") != std::string::npos);
    }
  }
  CHECK_FALSE(exists(mine));  // stale: removed by the caller's top
  CHECK(exists(empty));       // not a summary of ours: left alone
  CHECK(exists(pipe));
  for (const std::string& p : planted) unlink(p.c_str());
}

TEST_CASE("VRAMTRACE_NVML_LIBRARY naming a FIFO: top and a traced program go on without NVML, never hang") {
  std::string dir = e2e::temp_dir(), fifo = dir + "/nvml.fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  e2e::Spec s{{e2e::cli(), "top", "--once"}, {{"VRAMTRACE_NVML_LIBRARY", fifo}}};
  s.preload = false;
  s.timeout_s = 30;
  e2e::Result r = e2e::run(s);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("NVML (libnvidia-ml.so.1) not available") != std::string::npos);
  // The recorder loads NVML right after the first context (rule 14): a FIFO blocked that load.
  e2e::Spec t{{e2e::program("oom_scenarios"), "too-big"}, {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_NVML_LIBRARY", fifo}}};
  t.timeout_s = 30;
  r = e2e::run(t);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 0);
}

TEST_CASE("a report of a trace still being written says the process is running, not killed") {
  std::string dir = e2e::temp_dir(), shm;
  pid_t held = start_holder(dir, &shm);
  REQUIRE(access(shm.c_str(), F_OK) == 0);
  REQUIRE(e2e::files_in(dir).size() == 1);
  const std::string trace = e2e::files_in(dir)[0];
  auto cli_out = [](std::vector<std::string> args) {
    args.insert(args.begin(), e2e::cli());
    e2e::Spec s{args, {}};
    s.preload = false;
    return e2e::run(s);
  };
  e2e::Result r = cli_out({"report", trace, "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["leaks"]["end"] == "running");
  r = cli_out({"report", trace});
  CHECK(r.out.find("LEAKS (live now: the process is still running)") != std::string::npos);
  r = cli_out({"summary", trace});
  CHECK(r.out.find("still running: the trace is being written") != std::string::npos);
  r = cli_out({"report", dir});
  CHECK(r.out.find(" running ") != std::string::npos);
  CHECK(r.out.find("KILLED") == std::string::npos);
  kill(held, SIGKILL);
  waitpid(held, nullptr, 0);
  r = cli_out({"report", trace, "--format", "json"});
  CHECK(nlohmann::json::parse(r.out)["leaks"]["end"] == "killed");  // once its writer is gone
}
