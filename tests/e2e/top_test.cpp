// `vramtrace top --once`: GPUs from NVML (a stand-in library here) and a traced process through
// the simulated driver, with its live bytes and top call sites.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "harness.h"

TEST_CASE("top --once shows GPUs, a traced process, its live bytes and call sites") {
  std::string dir = e2e::temp_dir();
  pid_t held = fork();
  if (held == 0) {
    setenv("LD_LIBRARY_PATH", VT_FAKECUDA_DIR, 1);
    setenv("LD_PRELOAD", VT_LIBRARY, 1);
    setenv("VRAMTRACE_OUTPUT", dir.c_str(), 1);
    execl(e2e::program("lifecycle").c_str(), "lifecycle", "hold", (char*)nullptr);
    _exit(127);
  }
  e2e::Spec s{{e2e::cli(), "top", "--once"},
              {{"VRAMTRACE_NVML_LIBRARY", VT_FAKENVML}, {"FAKENVML_PROCESSES", "1:2147483648"}}};
  s.preload = false;
  std::string pid_line = "pid " + std::to_string(held) + "  ";
  e2e::Result r;
  for (int i = 0; i < 100; ++i) {  // the summary is refreshed every 250 ms
    r = e2e::run(s);
    if (r.out.find(pid_line) != std::string::npos && r.out.find("hold_second_site") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(held, SIGTERM);
  waitpid(held, nullptr, 0);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("GPU 0  Fake GPU (fakenvml)   used 2.00 GiB of 80.0 GiB") != std::string::npos);
  CHECK(r.out.find("pid 1  ") != std::string::npos);
  CHECK(r.out.find(pid_line) != std::string::npos);
  CHECK(r.out.find("device 0: 8.00 MiB live (peak 8.00 MiB)") != std::string::npos);
  CHECK(r.out.find("5.00 MiB  alloc(unsigned long) < main") != std::string::npos);
  CHECK(r.out.find("3.00 MiB  alloc(unsigned long) < hold_second_site") != std::string::npos);

  // Once it is gone, it is no longer listed.
  r = e2e::run(s);
  CHECK(r.out.find(pid_line) == std::string::npos);
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
