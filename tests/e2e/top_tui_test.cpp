// `vramtrace top` on a terminal: the interactive view, driven through tmux (send-keys, then
// capture-pane): it refreshes in place, sorts, opens and closes each process's call-site tree,
// finds the call sites of a trace written to a relative path, and gives the terminal back on q.
// On a pipe it prints the text form at each refresh.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "harness.h"

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string sh(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

// A traced `lifecycle hold MIB` started in `cwd`, writing its trace to the relative path `rel`.
pid_t holder(const std::string& cwd, const std::string& rel, int mib) {
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(96);
    setenv("LD_LIBRARY_PATH", VT_FAKECUDA_DIR, 1);
    setenv("LD_PRELOAD", VT_LIBRARY, 1);
    setenv("VRAMTRACE_OUTPUT", rel.c_str(), 1);
    setenv("VRAMTRACE_KERNELS", "0", 1);
    execl(e2e::program("lifecycle").c_str(), "lifecycle", "hold", std::to_string(mib).c_str(), (char*)nullptr);
    _exit(127);
  }
  return pid;
}

struct Tmux {
  std::string name = "vt-top-" + std::to_string(getpid());
  explicit Tmux(const std::string& command) {
    std::string script = e2e::temp_dir() + "/top.sh";
    std::ofstream(script) << command << "\necho TOP-EXITED $?\nsleep 60\n";
    REQUIRE(system(("tmux new-session -d -s " + name + " -x 132 -y 40 'sh " + script + "'").c_str()) == 0);
  }
  ~Tmux() { (void)!system(("tmux kill-session -t " + name + " 2>/dev/null").c_str()); }
  std::string screen(bool escapes = false) { return sh("tmux capture-pane -p " + std::string(escapes ? "-e " : "") + "-t " + name); }
  void keys(const std::string& k) {
    REQUIRE(system(("tmux send-keys -t " + name + " " + k).c_str()) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  // Waits (up to 10 s) until the screen holds `what`; returns the screen.
  std::string wait_for(const std::string& what, bool escapes = false) {
    std::string s;
    for (int i = 0; i < 100; ++i) {
      s = screen(escapes);
      if (has(s, what)) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return s;
  }
};

// The screen line holding `what`, or "".
std::string line_with(const std::string& screen, const std::string& what) {
  for (const std::string& l : e2e::lines(screen))
    if (has(l, what)) return l;
  return "";
}

}  // namespace

TEST_CASE("top on a terminal: a live view with a call-site tree per process, sortable, that gives the terminal back") {
  if (system("command -v tmux >/dev/null 2>&1") != 0) FAIL("tmux is not installed (scripts/deps.sh installs it)");
  std::string dir = e2e::temp_dir();
  REQUIRE(system(("mkdir -p " + dir + "/a/traces " + dir + "/b/traces").c_str()) == 0);
  pid_t small = holder(dir + "/a", "traces/small.trace", 5);   // 8 MiB live
  pid_t big = holder(dir + "/b", "./traces/big.trace", 20);    // 23 MiB live
  // Both published before the view starts: the selection starts on the first row and follows it.
  for (pid_t p : {small, big})
    for (int i = 0; i < 400 && access(("/dev/shm/vramtrace." + std::to_string(p)).c_str(), F_OK) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // and their first 250 ms update
  {
    Tmux t("VRAMTRACE_NVML_LIBRARY=" VT_FAKENVML " FAKENVML_PROCESSES=1:2147483648 " + e2e::cli() + " top --interval 0.3");
    std::string s = t.wait_for("hold_second_site() > alloc(unsigned long)");
    INFO(s);
    // Both processes, their traces by absolute path (they wrote relative ones), the largest first.
    std::string small_row = line_with(s, dir + "/a/traces/small.trace"), big_row = line_with(s, dir + "/b/traces/big.trace");
    CHECK(has(small_row, std::to_string(small) + " "));
    CHECK(has(small_row, "8.00 MiB"));
    CHECK(has(big_row, std::to_string(big) + " "));
    CHECK(has(big_row, "23.0 MiB"));
    CHECK(s.find(big_row) < s.find(small_row));
    CHECK(has(s, "sort: live"));
    CHECK(has(s, "GPU 0  Fake GPU (fakenvml)  [#...................]  used 2.00 GiB of 80.0 GiB"));
    // The tree: main holds everything, split into its two call sites, largest first.
    CHECK(has(s, "23.0 MiB     [-] main"));
    CHECK(has(s, "20.0 MiB           alloc(unsigned long)"));
    CHECK(has(s, "3.00 MiB           hold_second_site() > alloc(unsigned long)"));
    // It refreshes in place: the clock in the header moves, the screen is not scrolled.
    std::string first = e2e::lines(s)[0];
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    s = t.screen();
    CHECK(e2e::lines(s)[0] != first);
    CHECK(e2e::lines(s)[0].rfind("vramtrace top  ", 0) == 0);

    // The selection starts on the first row; down moves it to the tree's first node.
    CHECK(has(line_with(t.screen(true), "\033[7m"), big_row.substr(0, 20)));
    t.keys("Down");
    CHECK(has(line_with(t.screen(true), "\033[7m"), "[-] main"));
    // Left closes the node (its sites vanish), right opens it again.
    t.keys("Left");
    s = t.screen();
    CHECK(has(s, "23.0 MiB     [+] main"));
    CHECK_FALSE(has(s, "20.0 MiB           alloc(unsigned long)"));
    t.keys("Right");
    CHECK(has(t.screen(), "20.0 MiB           alloc(unsigned long)"));
    // Left on a leaf goes to its parent; left there closes it; left again goes to the process.
    t.keys("Down Left");
    CHECK(has(line_with(t.screen(true), "\033[7m"), "[-] main"));
    t.keys("Left Left");
    s = t.screen(true);
    CHECK(has(line_with(s, "\033[7m"), "[-] " + std::to_string(big)));
    t.keys("Left");
    CHECK(has(t.screen(), "[+] " + std::to_string(big)));

    // s cycles the sort: peak (the same order here), pid (the smaller pid first).
    t.keys("s");
    s = t.screen();
    CHECK(has(s, "sort: peak"));
    t.keys("s");
    s = t.screen();
    CHECK(has(s, "sort: pid"));
    size_t at_small = s.find(dir + "/a/traces/small.trace"), at_big = s.find(dir + "/b/traces/big.trace");
    CHECK((small < big) == (at_small < at_big));
    t.keys("s");
    CHECK(has(t.screen(), "sort: live"));
    // p pauses the refresh.
    t.keys("p");
    s = t.screen();
    CHECK(has(s, "(paused)"));
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    CHECK(e2e::lines(t.screen())[0] == e2e::lines(s)[0]);
    t.keys("p");

    // q: back to the shell's screen, status 0, nothing of the view left on it.
    t.keys("q");
    s = t.wait_for("TOP-EXITED 0");
    CHECK(has(s, "TOP-EXITED 0"));
    CHECK_FALSE(has(s, "TRACED PROCESSES"));
  }
  kill(small, SIGTERM);
  kill(big, SIGTERM);
  waitpid(small, nullptr, 0);
  waitpid(big, nullptr, 0);
}

TEST_CASE("top on a pipe prints the text form at each refresh, and --once one snapshot") {
  e2e::Spec s{{e2e::cli(), "top", "--interval", "0.2"}, {{"VRAMTRACE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}}};
  s.preload = false;
  s.timeout_s = 1;
  e2e::Result r = e2e::run(s);
  CHECK(r.timed_out);
  size_t n = 0;
  for (const std::string& l : e2e::lines(r.out)) n += l.rfind("vramtrace top  ", 0) == 0;
  CHECK(n >= 3);
  CHECK_FALSE(has(r.out, "\033"));  // no screen control on a pipe
  s.argv = {e2e::cli(), "top", "--once"};
  s.timeout_s = 60;
  r = e2e::run(s);
  CHECK(r.exit_code == 0);
  n = 0;
  for (const std::string& l : e2e::lines(r.out)) n += l.rfind("vramtrace top  ", 0) == 0;
  CHECK(n == 1);
}
