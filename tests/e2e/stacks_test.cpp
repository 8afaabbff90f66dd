// Native stacks: captured per event, deduplicated, symbolized offline with the right function
// names, files and lines, inlined frames included, for a library dlopen'ed after start.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "symbolizer.h"

namespace {

std::map<std::string, int> expected_lines(const std::string& out) {
  std::map<std::string, int> m;
  std::istringstream in(out);
  std::string name;
  int line;
  while (in >> name >> line) m[name] = line;
  return m;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// stack_main with its plugin, traced (started through `loader` when one is given): the lines it
// printed (function -> line) and its one trace, open with its stacks loaded.
struct StackMain {
  std::map<std::string, int> lines;
  std::unique_ptr<vt::analyzer::TraceReader> reader;
};
StackMain run_stack_main(const std::string& loader = "") {
  std::string dir = e2e::temp_dir();
  std::vector<std::string> argv = {e2e::program("stack_main"), e2e::program("libstack_plugin.so")};
  if (!loader.empty()) argv.insert(argv.begin(), loader);
  e2e::Result r = e2e::run({argv, {{"VRAMTRACE_OUTPUT", dir}}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  StackMain m;
  m.lines = expected_lines(r.out);
  auto files = e2e::files_in(dir);
  REQUIRE(files.size() == 1);
  std::string err;
  m.reader = vt::analyzer::TraceReader::open(files[0], &err);
  REQUIRE(m.reader);
  m.reader->load_stacks();
  return m;
}

// A bad value of `var`: its one line, tracing off, the program's own run and status untouched.
void check_bad_setting(const char* var, const char* value, const std::string& line) {
  INFO(var << "=" << value);
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("threads"), "2", "20"}, {{"VRAMTRACE_OUTPUT", dir}, {var, value}}});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find(line) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(e2e::files_in(dir).empty());
}

}  // namespace

TEST_CASE("C and C++ call chains come back symbolized, inlined frames and late libraries included") {
  StackMain run = run_stack_main();
  auto& lines = run.lines;
  auto& reader = run.reader;
  vt::analyzer::Symbolizer sym(reader->stacks());
  std::vector<vt::analyzer::Record> events;
  vt::analyzer::Record rec;
  while (reader->next(&rec))
    if (rec.is_event() && rec.op && rec.op->kind != vt::MemKind::Code) events.push_back(rec);  // (not its context's creation)
  REQUIRE(events.size() == 2);
  CHECK(events[0].stack != 0);
  CHECK(events[1].stack != 0);
  CHECK(events[0].stack != events[1].stack);

  const auto& s0 = sym.stack(events[0].stack);
  REQUIRE(s0.size() >= 3);
  for (const auto& f : s0) CHECK(f.module.find("libvramtrace") == std::string::npos);  // our frames trimmed
  CHECK(s0[0].function == "middle_alloc");  // inlined: its DWARF name
  CHECK(s0[0].inlined);
  CHECK(ends_with(s0[0].file, "stack_main.cpp"));
  CHECK(s0[0].line == lines["middle_alloc"]);
  CHECK(s0[1].function == "demo::outer_alloc(unsigned long long*)");
  CHECK(s0[1].line == lines["outer_alloc"]);
  CHECK(s0[2].function == "main");
  CHECK(s0[2].line == lines["main"]);

  const auto& s1 = sym.stack(events[1].stack);
  REQUIRE(s1.size() >= 2);
  CHECK(s1[0].function == "plugin_alloc");
  CHECK(ends_with(s1[0].module, "libstack_plugin.so"));
  CHECK(ends_with(s1[0].file, "plugin.c"));
  CHECK(s1[0].line == lines["plugin_alloc"]);
  CHECK(s1[1].function == "main");
}

// Frees are not unwound unless VRAMTRACE_FREE_STACKS=1 (docs/PERFORMANCE.md: unwinding a free cost
// as much as its allocation, and its stack is rarely read): every free's stack is 0 by default,
// every allocation has one; with the setting, frees have theirs (and their own call sites).
TEST_CASE("frees carry no stack unless VRAMTRACE_FREE_STACKS=1, allocations always do") {
  for (const char* setting : {"", "1"}) {
    INFO("VRAMTRACE_FREE_STACKS=" << setting);
    std::string dir = e2e::temp_dir();
    e2e::Result r = e2e::run({{e2e::program("threads"), "2", "200"}, {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_FREE_STACKS", setting}}});
    REQUIRE(r.exit_code == 0);
    std::string err;
    auto reader = vt::analyzer::TraceReader::open(e2e::files_in(dir).at(0), &err);
    REQUIRE(reader);
    size_t frees = 0, frees_with = 0, allocs = 0, allocs_with = 0;
    while (const vt::analyzer::Record* rec = reader->next()) {
      // The program's own allocations and frees (device and stream-ordered memory; not the
      // context the driver makes for it).
      if (!rec->is_event() || !rec->op || rec->result != 0) continue;
      if (rec->op->kind != vt::MemKind::Device && rec->op->kind != vt::MemKind::Async) continue;
      if (rec->op->action == vt::Action::Release) ++frees, frees_with += rec->stack != 0;
      if (rec->op->action == vt::Action::Acquire) ++allocs, allocs_with += rec->stack != 0;
    }
    CHECK(frees >= 400);
    CHECK(allocs >= 400);
    CHECK(allocs_with == allocs);
    CHECK(frees_with == (setting[0] ? frees : 0));
  }
  check_bad_setting("VRAMTRACE_FREE_STACKS", "yes", "bad VRAMTRACE_FREE_STACKS 'yes' (use 0 or 1)");
}

TEST_CASE("stacks are written once and an unknown module keeps module+offset") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("threads"), "4", "3000"}, {{"VRAMTRACE_OUTPUT", dir}}});
  REQUIRE(r.exit_code == 0);
  std::string err;
  auto reader = vt::analyzer::TraceReader::open(e2e::files_in(dir).at(0), &err);
  REQUIRE(reader);
  reader->load_stacks();
  // 4 threads x (alloc, allocAsync, keep) call sites: a handful of stacks (frees get none by default).
  CHECK(reader->stacks().stacks.size() >= 3);
  CHECK(reader->stacks().stacks.size() <= 16);
  CHECK(reader->stacks().stack_depth == 64);
  CHECK(reader->stacks().threads.size() == 4);

  // Symbolizing against a sysroot that lacks the files: frames stay, with module and offset.
  std::vector<std::string> warned;
  vt::analyzer::Symbolizer sym(reader->stacks(), {"/nonexistent-sysroot", {}, [&](const std::string& w) { warned.push_back(w); }});
  uint32_t first_id = 0;
  reader->stacks().stacks.for_each([&](uint32_t id, const vt::analyzer::StackFrames::Frames&) {
    if (!first_id) first_id = id;
  });
  const auto& frames = sym.stack(first_id);
  REQUIRE_FALSE(frames.empty());
  std::set<std::string> modules;
  for (const auto& f : frames) {
    CHECK(f.function == "??");
    CHECK(f.module != "");
    modules.insert(f.module);
  }
  // Each module's missing file is said once, by name (the frames above share modules).
  CHECK(warned.size() == modules.size());
  for (const std::string& m : modules)
    CHECK(std::count(warned.begin(), warned.end(),
                     "/nonexistent-sysroot" + m + ": cannot open: No such file or directory; its frames stay module+offset") == 1);
}

TEST_CASE("VRAMTRACE_STACK_DEPTH=0 turns stacks off, a bad value turns tracing off") {
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("lookup_direct")}, {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_STACK_DEPTH", "0"}}});
  REQUIRE(r.exit_code == 0);
  e2e::Trace t = e2e::load(e2e::files_in(dir).at(0));
  for (const auto& e : t.events) CHECK(e.stack == 0);

  std::string dir2 = e2e::temp_dir();
  r = e2e::run({{e2e::program("lookup_direct")}, {{"VRAMTRACE_OUTPUT", dir2}, {"VRAMTRACE_STACK_DEPTH", "lots"}}});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("bad VRAMTRACE_STACK_DEPTH 'lots'") != std::string::npos);
  CHECK(e2e::files_in(dir2).empty());

  std::string dir3 = e2e::temp_dir();
  r = e2e::run({{e2e::program("stack_main"), e2e::program("libstack_plugin.so")},
                {{"VRAMTRACE_OUTPUT", dir3}, {"VRAMTRACE_STACK_DEPTH", "2"}}});
  REQUIRE(r.exit_code == 0);
  std::string err;
  auto reader = vt::analyzer::TraceReader::open(e2e::files_in(dir3).at(0), &err);
  reader->load_stacks();
  reader->stacks().stacks.for_each([](uint32_t, const vt::analyzer::StackFrames::Frames& frames) { CHECK(frames.size() <= 2); });
}

TEST_CASE("a new call path per allocation: each stack reads back with its own path, written as deltas") {
  // 4^6 paths through six levels of branch0..branch3: 4,096 allocations, each from its own stack,
  // consecutive ones differing in their innermost levels (interpose/stacks/stack_index.cpp writes them
  // as deltas of the thread's previous stack; trace_reader.cpp rebuilds them).
  const int paths = 4096, depth = 6;
  std::string dir = e2e::temp_dir();
  e2e::Result r = e2e::run({{e2e::program("call_tree"), std::to_string(paths), std::to_string(depth)}, {{"VRAMTRACE_OUTPUT", dir}}});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> want;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) want.push_back(line);
  REQUIRE(want.size() == size_t(paths));

  std::string err;
  std::string path = e2e::files_in(dir).at(0);
  auto reader = vt::analyzer::TraceReader::open(path, &err);
  REQUIRE(reader);
  reader->load_stacks();
  vt::analyzer::Symbolizer sym(reader->stacks());
  std::vector<uint32_t> alloc_stacks;
  vt::analyzer::Record rec;
  while (reader->next(&rec))
    if (rec.is_event() && rec.op && std::string(rec.op->name) == "cuMemAlloc_v2") alloc_stacks.push_back(rec.stack);
  CHECK(reader->problems().empty());
  REQUIRE(alloc_stacks.size() == size_t(paths));
  CHECK(std::set<uint32_t>(alloc_stacks.begin(), alloc_stacks.end()).size() == size_t(paths));
  size_t mismatched = 0;
  for (int i = 0; i < paths; ++i) {
    // The branch frames, innermost first, read back outermost first as the program printed them.
    std::string got;
    for (const auto& f : sym.stack(alloc_stacks[size_t(i)]))
      if (size_t at = f.function.find("branch"); at != std::string::npos && at + 6 < f.function.size())
        got.insert(got.begin(), f.function[at + 6]);
    if (got != want[size_t(i)] && ++mismatched <= 3) CHECK(got == want[size_t(i)]);
  }
  CHECK(mismatched == 0);
  // The frees come from one stack, the allocations' 4,096 from ~14 frames each: as deltas the
  // whole file's records stay under 40 B per event (written whole, each new stack would be ~17
  // frames of 6-7 bytes).
  auto info = e2e::run({{e2e::cli(), "info", path}, {}});
  REQUIRE(info.exit_code == 0);
  auto j = nlohmann::json::parse(info.out);
  double per_event = double(j["record_bytes"].get<uint64_t>()) / double(j["events"].get<uint64_t>());
  INFO("record bytes per event " << per_event);
  CHECK(per_event < 40);
}

TEST_CASE("a program started through the dynamic loader (ld.so PROGRAM) is named and symbolized as itself") {
  // The kernel then runs ld.so, so /proc/self/exe names ld.so while the main link map is the
  // program: its module record once carried ld.so's path with the program's build-id and range
  // (every frame of the program stayed module+offset, with a "another build" warning).
  const std::string loader = "/lib64/ld-linux-x86-64.so.2";
  REQUIRE(access(loader.c_str(), X_OK) == 0);
  StackMain run = run_stack_main(loader);
  auto& lines = run.lines;
  auto& reader = run.reader;
  char real[4096];
  REQUIRE(realpath(e2e::program("stack_main").c_str(), real));
  CHECK(reader->process().exe == real);
  int program_modules = 0, loader_modules = 0;
  for (const auto& m : reader->stacks().modules) {
    program_modules += m.path == real;
    loader_modules += m.path == loader;  // ld.so itself, once (the program was a second)
  }
  CHECK(program_modules == 1);
  CHECK(loader_modules <= 1);
  std::vector<std::string> warned;
  vt::analyzer::Symbolizer sym(reader->stacks(), {"", {}, [&](const std::string& w) { warned.push_back(w); }});
  vt::analyzer::Record rec;
  uint32_t stack = 0;
  while (reader->next(&rec))
    if (rec.is_event() && rec.op && rec.op->kind != vt::MemKind::Code && !stack) stack = rec.stack;
  REQUIRE(stack);
  const auto& s = sym.stack(stack);
  REQUIRE(s.size() >= 3);
  CHECK(s[1].function == "demo::outer_alloc(unsigned long long*)");
  CHECK(s[2].function == "main");
  CHECK(s[2].line == lines["main"]);
  CHECK(warned.empty());
}

namespace {
// "vramtrace: unwinder check: D of W stacks differed from libunwind's; L walked by libunwind alone"
struct UnwinderCheck {
  long differed = -1, walked = -1, alone = -1;
};
UnwinderCheck unwinder_check(const std::string& err) {
  UnwinderCheck c;
  size_t at = err.find("vramtrace: unwinder check: ");
  if (at != std::string::npos)
    sscanf(err.c_str() + at, "vramtrace: unwinder check: %ld of %ld stacks differed from libunwind's; %ld walked",
           &c.differed, &c.walked, &c.alone);
  return c;
}
}  // namespace

#if defined(__x86_64__)  // (elsewhere every stack is libunwind's: fast_unwind.h)
// The hook's own unwinder (interpose/stacks/fast_unwind.h) gives libunwind's frames for every
// stack it walks, and hands it the ones it does not handle: every stack shape of unwind_shapes
// (frame pointers, alloca, a realigned stack, two callers with the same frames, libc callbacks,
// a small thread, stacks deeper than the deepest walk; a signal handler's and a fiber's go to
// libunwind) at three depths, then 4 threads at 24 frames
// (the memo of each thread's last walk on every allocation), each walked both ways.
TEST_CASE("the hook's own unwinder gives libunwind's frames, shape by shape (VRAMTRACE_UNWINDER=checked)") {
  UnwinderCheck c;
  for (const char* depth : {"64", "256", "3"}) {  // (the default, the deepest, and walks cut short)
    INFO("VRAMTRACE_STACK_DEPTH=" << depth);
    e2e::Result r = e2e::run({{e2e::program("unwind_shapes"), "60"},
                              {{"VRAMTRACE_OUTPUT", e2e::temp_dir()}, {"VRAMTRACE_UNWINDER", "checked"}, {"VRAMTRACE_STACK_DEPTH", depth}}});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    c = unwinder_check(r.err);
    CHECK(c.differed == 0);
    CHECK(c.walked >= 60 * 6 + 20 + 4 + 20);  // six allocations a round, 20 deep ones, qsort's 4, the small thread's 20
    CHECK(c.alone == 2);  // the signal handler's stack and the fiber's
  }

  e2e::Result t = e2e::run({{e2e::program("threads"), "4", "2000", "21"}, {{"VRAMTRACE_OUTPUT", e2e::temp_dir()}, {"VRAMTRACE_UNWINDER", "checked"}}});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  c = unwinder_check(t.err);
  CHECK(c.differed == 0);
  CHECK(c.walked >= 4 * 2000);
  CHECK(c.alone == 0);
}
#endif

// VRAMTRACE_UNWINDER=libunwind: the same stacks, walked by libunwind alone; a bad value is one line.
TEST_CASE("VRAMTRACE_UNWINDER=libunwind gives the same stacks, a bad value turns tracing off with one line") {
  auto stacks_of = [](const char* unwinder) {
    std::string dir = e2e::temp_dir();
    e2e::Result r = e2e::run({{e2e::program("stack_main"), e2e::program("libstack_plugin.so")},
                              {{"VRAMTRACE_OUTPUT", dir}, {"VRAMTRACE_UNWINDER", unwinder}}});
    REQUIRE(r.exit_code == 0);
    std::string err;
    auto reader = vt::analyzer::TraceReader::open(e2e::files_in(dir).at(0), &err);
    REQUIRE(reader);
    reader->load_stacks();
    vt::analyzer::Symbolizer sym(reader->stacks());
    std::vector<std::string> frames;
    vt::analyzer::Record rec;
    while (reader->next(&rec))
      if (rec.is_event() && rec.stack)
        for (const auto& f : sym.stack(rec.stack)) frames.push_back(f.function + ":" + std::to_string(f.line));
    return frames;
  };
  std::vector<std::string> ours = stacks_of("vramtrace"), theirs = stacks_of("libunwind");
  CHECK(ours.size() >= 5);
  CHECK(ours == theirs);

  check_bad_setting("VRAMTRACE_UNWINDER", "fast", "bad VRAMTRACE_UNWINDER 'fast' (use vramtrace, libunwind or checked)");
}
