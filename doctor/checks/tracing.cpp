// Can vramtrace trace here: libvramtrace.so is present and loads; LD_PRELOAD can reach the
// Python interpreter (not static, not set-user-ID or capability-raised, which make the loader
// ignore or restrict LD_PRELOAD); and a self-test: a tiny child under LD_PRELOAD allocates and
// frees 1 MiB through the driver, and the trace it leaves must hold both calls.
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "byte_size.h"
#include "../elf_info.h"
#include "../probes/probes.h"
#include "../util.h"
#include "checks.h"
#include "trace_reader.h"

namespace vt::doctor {

namespace {

bool check_library(Facts& f, Report& r) {
  const std::string& lib = f.overrides.libvramtrace;
  if (lib.empty() || !is_file(lib)) {
    r.add("tracing", "tracing.library", Verdict::problem,
          "libvramtrace.so not found (looked for " + (lib.empty() ? std::string("../lib beside vramtrace") : lib) + ")",
          "build it (cmake --build build) or install vramtrace with its lib/ directory; VRAMTRACE_LIBRARY names it "
          "explicitly")
        .data = {{"path", lib}, {"found", false}, {"loaded", false}};
    return false;
  }
  Isolated p = probe_dlopen(lib);
  bool loaded = p.ok && p.value.value("loaded", false);
  std::string error = !p.ok ? p.error : p.value.value("error", std::string());
  Check& c =
      r.add("tracing", "tracing.library", loaded ? Verdict::ok : Verdict::problem,
            loaded ? "libvramtrace.so at " + lib + " loads" : "libvramtrace.so at " + lib + " does not load: " + error);
  if (!loaded) c.advice = "rebuild it for this machine (a missing dependency or a different architecture)";
  c.data = {{"path", lib}, {"found", true}, {"loaded", loaded}, {"error", error}};
  return loaded;
}

void check_preload(Facts& f, Report& r) {
  if (f.python_executable.empty()) {
    r.add("tracing", "tracing.preload", Verdict::skipped, "no Python interpreter to check for LD_PRELOAD");
    return;
  }
  std::string exe = real_path(f.python_executable);
  ElfInfo e = read_elf(exe);
  struct stat st {};
  stat(exe.c_str(), &st);
  bool setuid = st.st_mode & S_ISUID, setgid = st.st_mode & S_ISGID;
  bool caps = getxattr(exe.c_str(), "security.capability", nullptr, 0) > 0;
  nlohmann::json data = {{"executable", exe},       {"elf", e.is_elf},
                         {"interpreter", e.interp}, {"static", e.is_elf && e.error.empty() && !e.has_interp},
                         {"needed", e.needed},      {"setuid", setuid},
                         {"setgid", setgid},        {"capabilities", caps}};
  Check& c = r.add("tracing", "tracing.preload", Verdict::ok, "");
  c.data = data;
  if (!e.is_elf) {
    c.verdict = Verdict::info;
    c.message = exe + " is not an ELF executable (" + e.error + "): LD_PRELOAD reaches whatever it runs";
  } else if (!e.error.empty()) {
    c.verdict = Verdict::info;
    c.message = exe + ": " + e.error + ", not checked";
  } else if (!e.has_interp) {
    c.verdict = Verdict::warning;
    c.message = exe + " is statically linked: the dynamic loader never runs, so LD_PRELOAD is ignored";
    c.advice = "vramtrace cannot trace programs run by this interpreter: use a dynamically linked Python";
  } else if (setuid || setgid || caps) {
    c.verdict = Verdict::warning;
    c.message = exe +
                (caps     ? " has file capabilities"
                 : setuid ? " is set-user-ID"
                          : " is set-group-ID") +
                ": the loader runs it in secure mode and ignores LD_PRELOAD libraries given by path";
    c.advice =
        "run a copy without those bits, or install libvramtrace.so in a system library directory and mark it "
        "set-user-ID";
  } else {
    c.message = "Python (" + exe + ") is dynamically linked (loader " + e.interp + "): LD_PRELOAD reaches it";
  }
}

std::string make_temp_dir() {
  std::string base = getenv_str("TMPDIR");
  if (base.empty() || !is_dir(base)) base = "/tmp";
  std::string tmpl = base + "/vramtrace-doctor-XXXXXX";
  return mkdtemp(&tmpl[0]) ? tmpl : std::string();
}

void remove_dir(const std::string& dir) {
  for (const std::string& n : list_dir(dir)) unlink((dir + "/" + n).c_str());
  rmdir(dir.c_str());
}

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

void check_selftest(Facts& f, Report& r, bool library_ok) {
  Verdict skip = Verdict::skipped;
  if (!library_ok) {
    r.add("tracing", "tracing.selftest", skip, "tracing self-test skipped: libvramtrace.so is not usable");
    return;
  }
  if (!f.driver_loaded()) {
    r.add("tracing", "tracing.selftest", skip, "tracing self-test skipped: no driver");
    return;
  }
  if (!f.driver_initialised()) {
    r.add("tracing", "tracing.selftest", skip, "tracing self-test skipped: cuInit fails (see the driver section)");
    return;
  }
  std::string dir = make_temp_dir(), exe = self_exe();
  if (dir.empty() || exe.empty()) {
    r.add("tracing", "tracing.selftest", Verdict::problem, "cannot create a temporary directory for the self-test",
          "make TMPDIR (or /tmp) writable");
    return;
  }
  std::string preload = f.overrides.libvramtrace;
  if (std::string old = getenv_str("LD_PRELOAD"); !old.empty()) preload += ":" + old;
  // Tracing must be on for the test even if the user's environment turns it off (the
  // environment section reports those variables).
  ProgramResult p = run_program({exe, kSelfTestArg, f.overrides.libcuda},
                                {{"LD_PRELOAD", preload},
                                 {"VRAMTRACE_OUTPUT", dir},
                                 {"VRAMTRACE_DISABLE", std::nullopt},
                                 {"VRAMTRACE_SINK", std::nullopt},
                                 {"VRAMTRACE_SESSION", std::nullopt}},
                                120);
  nlohmann::json child;
  std::vector<std::string> out_lines = split(trim(p.out), '\n');
  try {
    if (!out_lines.empty()) child = nlohmann::json::parse(out_lines.back());
  } catch (const std::exception&) {
  }
  std::vector<std::string> notes;  // the loader's and vramtrace's own complaints
  for (const std::string& l : split(trim(p.err), '\n'))
    if (l.find("vramtrace") != std::string::npos || l.find("ld.so") != std::string::npos) notes.push_back(l);

  nlohmann::json data = {{"exit_code", p.exit_code}, {"child", child}, {"trace_files", 0}};
  auto fail = [&](const std::string& msg, const std::string& advice) {
    Check& c = r.add("tracing", "tracing.selftest", Verdict::problem, "self-test failed: " + msg, advice);
    c.details = notes;
    c.data = data;
    remove_dir(dir);
  };
  if (!p.started || p.timed_out) return fail(p.error, "see the lines above; rerun `vramtrace doctor` to retry");
  // The loader complains about each LD_PRELOAD entry it cannot load; only ours matters here.
  for (const std::string& l : split(p.err, '\n'))
    if (l.find("cannot be preloaded") != std::string::npos && l.find(f.overrides.libvramtrace) != std::string::npos)
      return fail("the loader refused to preload " + f.overrides.libvramtrace, "see the loader's message below");
  if (child.is_object() && child.contains("error"))
    return fail("the test process could not reach the driver: " + child["error"].get<std::string>(), "");
  if (child.is_object() && child.contains("hooked") && !child["hooked"].get<bool>())
    return fail("dlsym in the test process did not return vramtrace's hook for cuMemAlloc_v2",
                "another preloaded library (LD_PRELOAD) may interpose dlsym first");

  std::vector<std::string> files = list_dir(dir);
  data["trace_files"] = files.size();
  if (files.empty())
    return fail("the test process wrote no trace",
                "the lines below are what vramtrace and the loader printed; TMPDIR (or /tmp) must be writable");
  bool alloc = false, freed = false;
  int alloc_result = -1;
  uint64_t bytes = 0;
  std::vector<std::string> problems;
  for (const std::string& name : files) {
    std::string err;
    auto reader = vt::analyzer::TraceReader::open(dir + "/" + name, &err);
    if (!reader) {
      problems.push_back(err);
      continue;
    }
    bytes += reader->file_size();
    vt::analyzer::Record rec;
    while (reader->next(&rec)) {
      if (!rec.is_event() || !rec.op) continue;
      std::string op = rec.op->name;
      if (op == "cuMemAlloc_v2" && rec.size == (1u << 20)) {
        alloc = true;
        alloc_result = rec.result;
      }
      if (op == "cuMemFree_v2") freed = true;
    }
    for (const std::string& pr : reader->problems()) problems.push_back(pr);
  }
  data["alloc_recorded"] = alloc;
  data["free_recorded"] = freed;
  data["alloc_result"] = alloc ? nlohmann::json(alloc_result) : nlohmann::json(nullptr);
  data["trace_bytes"] = bytes;
  for (const std::string& pr : problems) notes.push_back("trace: " + pr);
  if (!alloc)
    return fail("the trace does not contain the 1 MiB cuMemAlloc_v2", "please report this with the lines below");
  bool alloc_failed = alloc_result != 0;
  if (!alloc_failed && !freed)
    return fail("the trace lacks the cuMemFree_v2", "please report this with the lines below");
  Check& c = r.add("tracing", "tracing.selftest", Verdict::ok,
                   "self-test: a process run under LD_PRELOAD=libvramtrace.so had its 1 MiB cuMemAlloc_v2" +
                       std::string(alloc_failed ? "" : " and cuMemFree_v2") + " recorded (" + format_bytes(bytes) +
                       " of trace)");
  if (alloc_failed)
    c.details.push_back("the allocation itself failed (CUresult " + std::to_string(alloc_result) +
                        "): tracing works, the GPU is short of memory (see GPUs)");
  c.details.insert(c.details.end(), notes.begin(), notes.end());
  c.data = data;
  remove_dir(dir);
}

}  // namespace

void check_tracing(Facts& f, Report& r) {
  bool library_ok = check_library(f, r);
  check_preload(f, r);
  check_selftest(f, r, library_ok);
}

}  // namespace vt::doctor
