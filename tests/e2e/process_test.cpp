// Process behaviour: threads, fork, exec, crashes, exit codes, and processes that never use CUDA.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "harness.h"

namespace {

struct Traced {
  e2e::Result result;
  std::string dir;
  std::vector<std::string> files;
};

Traced traced(const std::vector<std::string>& argv, std::vector<std::pair<std::string, std::string>> env = {}) {
  Traced t;
  t.dir = e2e::temp_dir();
  env.push_back({"VRAMTRACE_OUTPUT", t.dir});
  t.result = e2e::run({argv, env});
  t.files = e2e::files_in(t.dir);
  return t;
}

std::vector<uint64_t> alloc_sizes(const e2e::Trace& t) {
  std::vector<uint64_t> out;
  for (const auto& e : t.events)
    if (e.op && std::string(e.op->name) == "cuMemAlloc_v2") out.push_back(e.size);
  return out;
}

}  // namespace

TEST_CASE("8 threads allocating at once: exact counts per thread and exact live bytes") {
  const int kThreads = 8, kIter = 2000;
  Traced t = traced({e2e::program("threads"), std::to_string(kThreads), std::to_string(kIter)});
  INFO(t.result.err);
  REQUIRE(t.result.exit_code == 0);
  REQUIRE(t.files.size() == 1);
  e2e::Trace tr = e2e::load(t.files[0]);
  CHECK(tr.events.size() == size_t(kThreads) * (2 * kIter + 1));
  std::map<uint32_t, int> per_thread;
  std::unordered_map<uint64_t, uint64_t> live;  // address -> size
  uint64_t live_bytes = 0;
  for (const auto& e : tr.events) {
    per_thread[e.tid]++;
    REQUIRE(e.op);
    REQUIRE(e.result == 0);
    if (e.op->action == vt::Action::Acquire) {
      CHECK(live.count(e.addr) == 0);  // time order: a reused address was freed first
      live[e.addr] = e.size;
      live_bytes += e.size;
    } else {
      REQUIRE(live.count(e.addr) == 1);
      live_bytes -= live[e.addr];
      live.erase(e.addr);
    }
  }
  CHECK(per_thread.size() == size_t(kThreads));
  for (const auto& [tid, n] : per_thread) CHECK(n == 2 * kIter + 1);
  CHECK(live.size() == size_t(kThreads));
  CHECK(live_bytes == 36ull << 20);  // 1 + 2 + ... + 8 MiB
}

TEST_CASE("fork: the child writes its own trace, the parent's holds only its own events") {
  Traced t = traced({e2e::program("lifecycle"), "fork"});
  INFO(t.result.err);
  REQUIRE(t.result.exit_code == 0);
  REQUIRE(t.files.size() == 2);
  std::map<uint64_t, e2e::Trace> by_pid;
  for (const auto& f : t.files) {
    e2e::Trace tr = e2e::load(f);
    by_pid[tr.info.pid] = tr;
  }
  REQUIRE(by_pid.size() == 2);
  const e2e::Trace& parent = by_pid.begin()->second.info.ppid == std::prev(by_pid.end())->first
                                 ? std::prev(by_pid.end())->second
                                 : by_pid.begin()->second;
  const e2e::Trace& child = &parent == &by_pid.begin()->second ? std::prev(by_pid.end())->second
                                                               : by_pid.begin()->second;
  CHECK(child.info.ppid == parent.info.pid);
  CHECK(alloc_sizes(parent) == std::vector<uint64_t>{1 << 20, 3 << 20});
  CHECK(alloc_sizes(child) == std::vector<uint64_t>{2 << 20});
  CHECK(parent.info.closed_cleanly);
  CHECK(child.info.closed_cleanly);
}

TEST_CASE("exec: children inherit tracing, also when exec keeps the pid") {
  for (std::string mode : {"exec", "exec-same-pid"}) {
    INFO(mode);
    Traced t = traced({e2e::program("lifecycle"), mode});
    INFO(t.result.err);
    REQUIRE(t.result.exit_code == 0);
    REQUIRE(t.files.size() == 2);
    std::multiset<std::vector<uint64_t>> sizes;
    for (const auto& f : t.files) sizes.insert(alloc_sizes(e2e::load(f)));
    CHECK(sizes.count({1 << 20}) == 1);
    CHECK(sizes.count({7 << 20}) == 1);
  }
}

TEST_CASE("every event recorded before a violent death is read back") {
  const int kAllocs = 20000;  // spans many chunks
  for (std::string mode : {"crash-kill", "crash-abort", "crash-segv"}) {
    INFO(mode);
    Traced t = traced({e2e::program("lifecycle"), mode, std::to_string(kAllocs)});
    CHECK(t.result.exit_code != 5);
    REQUIRE(t.files.size() == 1);
    e2e::Trace tr = e2e::load(t.files[0]);
    CHECK(tr.events.size() == size_t(kAllocs));
    CHECK_FALSE(tr.info.closed_cleanly);
    CHECK_FALSE(tr.data_lost);
    bool reported = false;
    for (const auto& p : tr.problems) reported |= p.find("without a clean close") != std::string::npos;
    CHECK(reported);
  }
}

TEST_CASE("_exit and _Exit close the trace and say so, and a vfork child's _exit leaves the parent's trace open") {
  const int kAllocs = 20000;
  for (std::string mode : {"crash-exit", "quick-exit"}) {
    INFO(mode);
    Traced t = traced({e2e::program("lifecycle"), mode, std::to_string(kAllocs)});
    CHECK(t.result.exit_code == (mode == "crash-exit" ? 0 : 3));  // the program's own status
    REQUIRE(t.files.size() == 1);
    e2e::Trace tr = e2e::load(t.files[0]);
    CHECK(tr.events.size() == size_t(kAllocs));
    CHECK(tr.info.closed_cleanly);
    CHECK(tr.info.quick_exit);
    CHECK(tr.info.exit_status == (mode == "crash-exit" ? 0 : 3));
    CHECK_FALSE(tr.data_lost);
    for (const auto& p : tr.problems) CHECK(p.find("without a clean close") == std::string::npos);
    // The report: a clean exit (not "killed or crashed"), and how it exited.
    e2e::Result rep = e2e::run({{e2e::cli(), "report", t.files[0]}, {}});
    CHECK(rep.out.find("left through _exit(" + std::string(mode == "crash-exit" ? "0" : "3") + ")") != std::string::npos);
    CHECK(rep.out.find("killed or crashed") == std::string::npos);
    e2e::Result js = e2e::run({{e2e::cli(), "report", t.files[0], "--format", "json"}, {}});
    auto j = nlohmann::json::parse(js.out);
    CHECK(j["leaks"]["end"] == "clean_exit");
    CHECK(j["trace"]["quick_exit"] == true);
    CHECK(j["trace"]["exit_status"] == (mode == "crash-exit" ? 0 : 3));
  }
  Traced v = traced({e2e::program("lifecycle"), "vfork-exit"});
  INFO(v.result.err);
  CHECK(v.result.exit_code == 0);
  REQUIRE(v.files.size() == 1);
  e2e::Trace tr = e2e::load(v.files[0]);
  CHECK(alloc_sizes(tr) == std::vector<uint64_t>{1 << 20, 3 << 20});
  CHECK(tr.info.closed_cleanly);
  CHECK_FALSE(tr.info.quick_exit);
}

TEST_CASE("a SIGKILL from outside, mid-run, loses nothing that was recorded") {
  std::string dir = e2e::temp_dir();
  // threads runs long enough to be killed while allocating.
  e2e::Spec s{{"sh", "-c", e2e::program("threads") + " 4 100000000 & pid=$!; sleep 0.5; kill -9 $pid; wait $pid"},
              {{"VRAMTRACE_OUTPUT", dir}}};
  e2e::Result r = e2e::run(s);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  e2e::Trace tr = e2e::load(files[0]);
  CHECK(tr.events.size() > 1000);
  CHECK_FALSE(tr.info.closed_cleanly);
  CHECK_FALSE(tr.data_lost);
  // Alloc/free pairs per thread are intact up to the last one recorded.
  std::map<uint32_t, std::vector<const vt::analyzer::Record*>> per;
  for (const auto& e : tr.events) per[e.tid].push_back(&e);
  for (auto& [tid, evs] : per)
    for (size_t i = 0; i + 1 < evs.size(); i += 2) {
      CHECK(evs[i]->op->action == vt::Action::Acquire);
      CHECK(evs[i + 1]->addr == evs[i]->addr);
    }
}

TEST_CASE("the traced program's exit code and output are its own") {
  Traced t = traced({e2e::program("lifecycle"), "exit-code", "42"});
  CHECK(t.result.exit_code == 42);
  CHECK(t.result.err.empty());
  CHECK(t.files.size() == 1);
}

TEST_CASE("processes that make no CUDA memory call leave no file") {
  for (std::vector<std::string> argv : std::vector<std::vector<std::string>>{
           {e2e::program("lifecycle"), "none"},
           {e2e::program("lifecycle"), "init-only"},
           {"python3", "-c", "import ctypes, os; print(os.getpid())"},
           {"sh", "-c", "ls / > /dev/null"}}) {
    INFO(argv[0]);
    Traced t = traced(argv);
    CHECK(t.result.exit_code == 0);
    CHECK(t.result.err.empty());
    CHECK(t.files.empty());
  }
}

TEST_CASE("releasing the last reference of a primary context records that its memory went with it") {
  for (std::string mode : {"release-last", "release-extra"}) {
    INFO(mode);
    Traced t = traced({e2e::program("lifecycle"), mode});
    REQUIRE(t.result.exit_code == 0);
    REQUIRE(t.files.size() == 1);
    e2e::Trace tr = e2e::load(t.files[0]);
    REQUIRE(tr.ops() == std::vector<std::string>{"cuMemAlloc_v2", "cuDevicePrimaryCtxRelease_v2"});
    CHECK(tr.events[1].aux == 0);  // device 0
    if (mode == "release-last")
      CHECK(tr.events[1].aux2 == tr.events[0].context);
    else
      CHECK(tr.events[1].aux2 == 0);
  }
}

TEST_CASE("a fork while another thread makes the first memory call: the child never hangs") {
  // That call opens the trace and sets up the unwinder under locks (ours, libunwind's); a fork in
  // between once left the child a lock held forever by a thread it does not have (its first
  // allocation hung). Each delay lands the fork in another part of that first call.
  for (long us : {0L, 50L, 200L, 500L, 1000L, 2000L, 3000L, 5000L, 10000L}) {
    for (int round = 0; round < 3; ++round) {
      INFO("fork " << us << " us after the first call began, round " << round);
      Traced t = traced({e2e::program("lifecycle"), "fork-first", std::to_string(us)});
      CHECK(t.result.exit_code == 0);  // 2: the child hung (killed by its alarm)
      CHECK(!t.result.timed_out);
    }
  }
}

TEST_CASE("a fork while another thread walks the loader's list: the child never hangs") {
  // dl_iterate_phdr holds a lock that glibc's fork does not reset in the child; the program's child
  // never walks the list, our unwinder did (at the child's first allocation) and hung it forever
  // (found by CI: fork-first, one round in 27, when the fork landed in our first unwind).
  for (std::string when : {"first", "later"}) {
    INFO("fork " << when);
    Traced t = traced({e2e::program("lifecycle"), "fork-in-walk", when});
    CHECK(t.result.exit_code == 0);  // 2: the child hung (killed by its alarm)
    CHECK(t.result.err.empty());
    REQUIRE(t.files.size() == 2);
    for (const std::string& f : t.files) {
      e2e::Trace tr = e2e::load(f);
      std::vector<uint64_t> sizes = alloc_sizes(tr);
      if (std::find(sizes.begin(), sizes.end(), 8192) != sizes.end()) {
        CHECK(sizes == std::vector<uint64_t>{8192});  // the child: its allocation, without a native stack
        for (const auto& e : tr.events) CHECK(e.stack == 0);
      } else {
        CHECK(sizes.back() == (2u << 20));  // the parent: its walks go on, stacks and all
        CHECK(tr.events.back().stack != 0);
      }
    }
  }
}

TEST_CASE("a main thread that leaves with pthread_exit: the process ends as untraced and its trace is closed") {
  // The process ends when its last thread does; our sampler thread (every signal blocked) kept it
  // alive for ever, and a SIGTERM sent to it stayed pending.
  Traced t = traced({e2e::program("lifecycle"), "main-exit"});
  CHECK(t.result.exit_code == 0);
  CHECK(!t.result.timed_out);
  REQUIRE(t.files.size() == 1);
  e2e::Trace tr = e2e::load(t.files[0]);
  CHECK(tr.info.closed_cleanly);
  CHECK(alloc_sizes(tr) == std::vector<uint64_t>{1u << 20});
}

TEST_CASE("two copies of libvramtrace.so in LD_PRELOAD: the program runs and the first copy traces") {
  // An installed wheel's copy beside a build tree's: each copy's lookup of glibc's dlvsym found
  // the other's stub, and every process (/bin/true too) spun at 100% CPU for ever at start-up.
  std::string dir = e2e::temp_dir();
  std::string copy = dir + "/libvramtrace.so";
  REQUIRE(system(("cp " + std::string(VT_LIBRARY) + " " + copy).c_str()) == 0);
  for (const std::string& order : {copy + " " + VT_LIBRARY, std::string(VT_LIBRARY) + " " + copy}) {
    INFO(order);
    e2e::Result quiet = e2e::run({{"/bin/true"}, {{"LD_PRELOAD", order}}, true, false, -1, 20});
    CHECK(quiet.exit_code == 0);
    CHECK(!quiet.timed_out);
    CHECK(quiet.err.empty());  // no CUDA: nothing to say
    Traced t = traced({e2e::program("lifecycle"), "fork"}, {{"LD_PRELOAD", order}});
    CHECK(t.result.exit_code == 0);
    CHECK(!t.result.timed_out);
    CHECK(t.files.size() == 2);  // the parent's and the child's, by the copy loaded first
    const std::string first = order.substr(0, order.find(' ')), second = order.substr(order.find(' ') + 1);
    CHECK(t.result.err.find("two copies of libvramtrace.so are loaded: " + first + " traces, " + second +
                            " (loaded after it) stands down") != std::string::npos);
    for (const std::string& f : t.files) CHECK(alloc_sizes(e2e::load(f)).size() >= 1);
  }
}

TEST_CASE("a child of the raw fork system call that allocates writes a trace of its own") {
  // No atfork handler runs in it: it wrote its events into the parent's trace, under the
  // parent's pid (the parent's counts went wrong, a phantom leak appeared, nothing was flagged).
  Traced t = traced({e2e::program("lifecycle"), "raw-fork-alloc"});
  CHECK(t.result.exit_code == 0);
  CHECK(t.result.err.empty());
  REQUIRE(t.files.size() == 2);
  std::multiset<std::vector<uint64_t>> sizes;
  std::set<uint64_t> pids;
  for (const std::string& f : t.files) {
    e2e::Trace tr = e2e::load(f);
    CHECK(tr.problems.empty());
    sizes.insert(alloc_sizes(tr));
    pids.insert(tr.info.pid);
  }
  CHECK(sizes == std::multiset<std::vector<uint64_t>>{{1u << 20, 3u << 20}, {2u << 20}});
  CHECK(pids.size() == 2);
}

TEST_CASE("a partial driver without cuCtxGetDevice or cuDeviceGetName: the program runs and is traced") {
  // A trimmed or compatibility libcuda.so.1 (tests/fakecuda/partial_driver.c has seven functions):
  // the hook called the driver's cuCtxGetDevice unchecked and the program died of SIGSEGV at its
  // first allocation.
  const char* script =
      "import ctypes\n"
      "c = ctypes.CDLL('libcuda.so.1')\n"
      "dev, ctx, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()\n"
      "assert c.cuInit(0) == 0 and c.cuDeviceGet(ctypes.byref(dev), 0) == 0\n"
      "assert c.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and c.cuCtxSetCurrent(ctx) == 0\n"
      "assert c.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 20)) == 0\n"
      "assert c.cuMemFree_v2(p) == 0\n"
      "print('ok')\n";
  Traced t = traced({"python3", "-c", script}, {{"LD_LIBRARY_PATH", std::string(VT_FAKECUDA_DIR) + "-partial"}});
  CHECK(t.result.exit_code == 0);  // (139: SIGSEGV)
  CHECK(t.result.out == "ok\n");
  REQUIRE(t.files.size() == 1);
  CHECK(alloc_sizes(e2e::load(t.files[0])) == std::vector<uint64_t>{1u << 20});
}

TEST_CASE("quick_exit: the trace is closed with its status after the program's at_quick_exit handlers") {
  // glibc's quick_exit ends through its own internal _exit, which no export reaches: the trace
  // read as killed or crashed.
  Traced t = traced({e2e::program("lifecycle"), "std-quick-exit"});
  CHECK(t.result.exit_code == 6);
  REQUIRE(t.files.size() == 1);
  e2e::Trace tr = e2e::load(t.files[0]);
  CHECK(tr.info.closed_cleanly);
  CHECK(tr.info.quick_exit);
  CHECK(tr.info.exit_status == 6);
  CHECK(tr.ops() == std::vector<std::string>{"cuMemAlloc_v2", "cuMemFree_v2"});  // the handler's free is in
}

namespace {
// The peak resident memory (KiB) of `threads 1 N` traced into `dir`, stacks off (wait4's rusage).
long traced_max_rss_kib(long iterations, const std::string& dir) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("LD_LIBRARY_PATH", VT_FAKECUDA_DIR, 1);
    setenv("LD_PRELOAD", VT_LIBRARY, 1);
    setenv("VRAMTRACE_OUTPUT", dir.c_str(), 1);
    setenv("VRAMTRACE_KERNELS", "0", 1);
    setenv("VRAMTRACE_STACK_DEPTH", "0", 1);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    std::string n = std::to_string(iterations), prog = e2e::program("threads");
    execl(prog.c_str(), prog.c_str(), "1", n.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int st = 0;
  rusage ru{};
  if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  return ru.ru_maxrss;
}
}  // namespace

TEST_CASE("a long traced run does not grow: the trace's written windows leave the process's memory") {
  // Every 1 MiB window of the trace stayed mapped and resident: 8.6 bytes per event, 82 MiB at
  // 10 M events. 400,000 events against 4,000,000 (a 32 MiB trace): the same peak, within the 4
  // windows kept resident (TraceFile::kKeptWindows, 4 MiB: the small run's whole 3 MiB trace
  // fits in them; 2 MiB was too tight under a loaded CI machine's writeback: +2,092 KiB once).
  std::string a = e2e::temp_dir(), b = e2e::temp_dir();
  long small = traced_max_rss_kib(200000, a);
  long large = traced_max_rss_kib(2000000, b);
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
  REQUIRE(small > 0);
  REQUIRE(large > 0);
  INFO("peak RSS " << small << " KiB at 400k events, " << large << " KiB at 4M");
  CHECK(large - small < 4096);  // (before: +28 MiB)
}

TEST_CASE("a sandbox that denies getpid: the trace is still named and stamped with the process's pid") {
  // A seccomp filter answering getpid with EPERM made the file vramtrace.-1.trace, pid -1.
  Traced t = traced({e2e::program("lifecycle"), "no-getpid"});
  if (t.result.exit_code == 90) {
    WARN("cannot install a seccomp filter here: the denied-getpid case is not checked");
    return;
  }
  CHECK(t.result.exit_code == 0);
  REQUIRE(t.files.size() == 1);
  const std::string pid = t.result.out.substr(0, t.result.out.find('\n'));
  CHECK(t.files[0] == t.dir + "/vramtrace." + pid + ".trace");
  CHECK(std::to_string(e2e::load(t.files[0]).info.pid) == pid);
}

TEST_CASE("a sandbox that denies fstat: one line says tracing is off and the program runs") {
  // With newfstatat denied (every stat and fstat of glibc 2.33+) tracing turned off silently: the
  // output directory read as a file and our line was dropped, its stderr check failing too.
  Traced t = traced({e2e::program("lifecycle"), "no-fstatat"});
  if (t.result.exit_code == 90) {
    WARN("cannot install a seccomp filter here: the denied-fstat case is not checked");
    return;
  }
  CHECK(t.result.exit_code == 0);
  CHECK(t.result.err.find("; tracing off") != std::string::npos);
  CHECK(t.files.empty());  // no empty file left behind
}

TEST_CASE("a full /dev/shm: the traced program and its forked child run as they would untraced") {
  // The live summary for `top` is a file in /dev/shm; its pages were taken at the first store, so
  // a full tmpfs (Docker's 64 MiB default, filled by DataLoader workers) killed the program with
  // SIGBUS at its first allocation. In a mount namespace of its own, with /dev/shm a full tmpfs.
  const char* script =
      "mount -t tmpfs -o size=64k vt-shm /dev/shm 2>/dev/null || exit 90; "
      "dd if=/dev/zero of=/dev/shm/fill bs=4k 2>/dev/null; exec \"$@\"";
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{"unshare", "-m", "sh", "-c", script, "sh", e2e::program("lifecycle"), "fork"},
                            {{"VRAMTRACE_OUTPUT", dir}}});
  if (r.exit_code == 90 || r.err.find("unshare failed") != std::string::npos) {
    WARN("cannot make a mount namespace here (unshare -m): the full /dev/shm case is not checked");
    return;
  }
  INFO(r.err);
  CHECK(r.exit_code == 0);  // (135: SIGBUS)
  CHECK(e2e::files_in(dir).size() == 2);  // the parent's and the child's traces
}

TEST_CASE("the first memory call, which opens the trace, fits a 16 KiB thread stack") {
  // It needed ~50 KiB (the process record's and the path's buffers were on the stack): a thread
  // with Python's smallest stack (32 KiB) died of SIGSEGV at its first allocation. Then ~14 KiB
  // (opening, then unwinding): a 16 KiB thread (glibc's PTHREAD_STACK_MIN) died. Opening now runs
  // on a stack of ours, and unwinding only where there is room (stack_room.h).
  for (long kib : {16L, 20L, 24L, 32L, 48L}) {
    INFO(kib << " KiB");
    Traced t = traced({e2e::program("lifecycle"), "small-stack", std::to_string(kib)});
    CHECK(t.result.exit_code == 0);  // (139: SIGSEGV)
    CHECK(t.files.size() == 1);
  }
}

namespace {
// `lifecycle MODE` untraced and traced: the number each printed after "KEY " (what tracing adds).
std::pair<long, long> untraced_and_traced(const std::string& mode, const std::string& key, Traced* t) {
  e2e::Spec plain{{e2e::program("lifecycle"), mode}, {}};
  plain.preload = false;
  e2e::Result untraced = e2e::run(plain);
  *t = traced({e2e::program("lifecycle"), mode});
  INFO(untraced.out << t->result.out << t->result.err);
  REQUIRE(untraced.exit_code == 0);
  REQUIRE(t->result.exit_code == 0);
  auto value = [&](const std::string& out) {
    const size_t at = out.find(key + " ");
    REQUIRE(at != std::string::npos);
    return std::stol(out.substr(at + key.size() + 1));
  };
  return {value(untraced.out), value(t->result.out)};
}
}  // namespace

// The fork handlers stored to every window slot (2 MiB), per-stack counter (512 KiB) and queue
// header: each page they wrote was copied into every forked child (3 MiB, ~2 ms a fork).
TEST_CASE("a fork's handlers copy little into the child") {
  Traced t;
  const auto [before, after] = untraced_and_traced("fork-dirty", "dirty", &t);
  CHECK(after - before < 512);  // KiB (it was ~3,000)
}

// Descriptors: libunwind's memory check held a pipe (two descriptors) for the process's life, and
// the trace file one more; libunwind's check needs none now (interpose/stacks/unwinder_fds.h) and the
// trace file is closed between windows (trace_file.cpp).
TEST_CASE("traced, the program holds no descriptor of ours: not the trace file's, not libunwind's pipe") {
  Traced t;
  const auto [before, after] = untraced_and_traced("fds-held", "fds", &t);
  CHECK(after - before <= 1);  // NVML's device node in the simulated driver's sampler at most (it was 3)
  CHECK(t.files.size() == 1);
}

// libunwind.so.8 exports GCC's unwinder ABI (_Unwind_RaiseException, ...) without versions; linked
// by libvramtrace.so it sat in the global scope ahead of libgcc_s, and every C++ exception of a
// library opened later (a Python extension: PyTorch) went through libunwind's copy. Opened with
// RTLD_LOCAL (interpose/stacks/unwinder_library.h), it serves our stacks only.
TEST_CASE("traced, C++ exceptions of a library opened later go through libgcc_s, as untraced") {
  const std::string thrower = e2e::program("libexception_thrower.so");
  e2e::Spec untraced;
  untraced.argv = {e2e::program("exception_scope"), thrower};
  untraced.preload = false;
  e2e::Result u = e2e::run(untraced);
  INFO(u.err);
  REQUIRE(u.exit_code == 0);
  CHECK(u.out.find("libgcc_s.so.1\ncaught 7") != std::string::npos);
  Traced t = traced({e2e::program("exception_scope"), thrower});
  INFO(t.result.err);
  REQUIRE(t.result.exit_code == 0);
  CHECK(t.result.out == u.out);  // (it was "unwinder .../libunwind.so.8")
  REQUIRE(t.files.size() == 1);
  e2e::Trace tr = e2e::load(t.files[0]);
  bool stacked = false;
  for (const auto& e : tr.events) stacked |= e.op && std::string(e.op->name) == "cuMemAlloc_v2" && e.stack != 0;
  CHECK(stacked);  // the unwinder ran before the exception was thrown
}

// Under RLIMIT_NOFILE 4 the trace's descriptor took the program's third file (fopen failed).
TEST_CASE("under RLIMIT_NOFILE 4 the program still opens its own file, and the trace is complete") {
  Traced t = traced({e2e::program("lifecycle"), "nofile-4"});
  INFO(t.result.err);
  CHECK(t.result.exit_code == 0);  // (4: fopen failed)
  REQUIRE(t.files.size() == 1);
  e2e::Trace tr = e2e::load(t.files[0]);
  CHECK(alloc_sizes(tr) == std::vector<uint64_t>{1 << 20, 2 << 20});
  CHECK(tr.info.closed_cleanly);
}

// A signal handler on a small alternate stack (glibc's SIGSTKSZ is 8 KiB) that allocates: the hook
// needed ~14 KiB there to unwind and crashed into the guard page below the stack (or, on a malloc'd
// one, wrote into the heap). Without the room, the event is recorded without a stack, and the
// trace says so; with it, as usual.
TEST_CASE("a signal handler allocating on a small alternate stack: recorded without a stack, no overflow") {
  for (long kib : {8L, 12L, 16L, 64L}) {
    INFO(kib << " KiB");
    Traced t = traced({e2e::program("lifecycle"), "altstack-alloc", std::to_string(kib)});
    INFO(t.result.err);
    CHECK(t.result.exit_code == 0);  // (139: SIGSEGV, the guard page)
    REQUIRE(t.files.size() == 1);
    e2e::Trace tr = e2e::load(t.files[0]);
    CHECK(alloc_sizes(tr) == std::vector<uint64_t>{1 << 20, 2 << 20});
    const vt::analyzer::Record* handler = nullptr;
    const vt::analyzer::Record* main_alloc = nullptr;
    for (const auto& e : tr.events)
      if (e.op && std::string(e.op->name) == "cuMemAlloc_v2") (e.size == 1 << 20 ? handler : main_alloc) = &e;
    REQUIRE(handler);
    REQUIRE(main_alloc);
    CHECK(main_alloc->stack != 0);
    const bool room = kib >= 64;
    CHECK((handler->stack != 0) == room);
    CHECK(tr.metadata.count(vt::format::kTagNote) == (room ? 0u : 1u));
    if (!room) {
      e2e::Result r = e2e::run_cli({"report", t.files[0]});
      CHECK(r.out.find("note: the recorder: events recorded without a stack: too little stack was left") != std::string::npos);
    }
  }
}

TEST_CASE("a child of the raw fork system call that calls exit() leaves the parent's trace alone") {
  // No atfork handler runs in such a child: it still holds the parent's trace, and its exit
  // marked the parent's live trace closed (then "end record missing" once the parent went on).
  Traced t = traced({e2e::program("lifecycle"), "raw-fork"});
  CHECK(t.result.exit_code == 0);  // (5: the child removed the parent's live summary)
  REQUIRE(t.files.size() == 1);
  e2e::Trace tr = e2e::load(t.files[0]);
  CHECK(tr.info.closed_cleanly);
  CHECK(tr.problems.empty());
  CHECK(alloc_sizes(tr) == std::vector<uint64_t>{1 << 20, 3 << 20});
}
