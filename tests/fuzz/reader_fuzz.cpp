// libFuzzer target for the trace reader, the symbolizer and the analysis: any byte string, read
// as a trace file, must be reported on (open error or problems()), never crash, hang, leak or hit
// undefined behaviour. Drives what `vramtrace dump --stacks --meta`, `vramtrace info`,
// `vramtrace report`, `diff`, `check` and `export` do: open, next() to the end, load_stacks(),
// problems(), JSON of every record, symbolization of every stack, the full analysis rendered as
// JSON and text (one trace and a job), diff against nothing and itself (text and JSON), every
// gate limit against itself as the baseline, folded stacks (peak and leaks) and the Perfetto
// export.
//
// The input reaches TraceReader::open as a real file path without touching the disk: a memfd,
// opened again through /proc/self/fd/N (the reader opens and mmaps paths). Falls back to a
// temporary file when memfd_create is unavailable.
//
// Built by tests/fuzz/run_fuzz.sh (clang, -fsanitize=fuzzer,address,undefined) and, without
// libFuzzer, by tests/fuzz/CMakeLists.txt with replay_main.cpp to replay the kept corpus.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>

#include "analysis.h"
#include "compare.h"
#include "folded.h"
#include "gate.h"
#include "perfetto_export.h"
#include "record_json.h"
#include "report_render.h"
#include "symbolizer.h"
#include "trace_reader.h"

namespace {

// One backing file for the whole run, rewritten per input.
struct InputFile {
  int fd = -1;
  std::string path;
  bool temp = false;

  InputFile() {
    fd = int(memfd_create("vt-reader-fuzz", MFD_CLOEXEC));
    if (fd >= 0) {
      path = "/proc/self/fd/" + std::to_string(fd);
      if (access(path.c_str(), R_OK) == 0) return;
      close(fd);
    }
    char tmpl[] = "/tmp/vt-reader-fuzz-XXXXXX";
    fd = mkstemp(tmpl);
    if (fd < 0) {
      perror("reader_fuzz: mkstemp");
      abort();
    }
    path = tmpl;
    temp = true;
  }
  ~InputFile() {
    if (temp) unlink(path.c_str());
    if (fd >= 0) close(fd);
  }

  void set(const uint8_t* data, size_t size) {
    if (ftruncate(fd, 0) != 0) abort();
    size_t done = 0;
    while (done < size) {
      ssize_t n = pwrite(fd, data + done, size - done, off_t(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        perror("reader_fuzz: pwrite");
        abort();
      }
      done += size_t(n);
    }
  }
};

// Keeps the optimizer from dropping the JSON work.
volatile size_t g_sink;

void consume(const nlohmann::json& j) {
  g_sink = g_sink + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
}

// JSON of the innermost frames of a stack (up to 4096 frames: all of them costs too much time).
void consume_stack(const std::vector<vt::analyzer::Frame>& frames) {
  constexpr size_t kFrames = 32;
  if (frames.size() <= kFrames) return consume(vt::analyzer::stack_json(frames));
  consume(vt::analyzer::stack_json({frames.begin(), frames.begin() + kFrames}));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vt::analyzer;
  static InputFile* file = new InputFile();  // lives for the process (no exit-time order issues)
  file->set(data, size);

  std::string error;
  std::unique_ptr<TraceReader> reader = TraceReader::open(file->path, &error);
  if (!reader) {
    if (error.empty()) abort();  // a refusal always says why
    return 0;
  }
  reader->load_stacks();
  reader->load_stacks();  // idempotent
  consume(process_json(reader->process()));

  // The symbolizer is built before streaming, as `vramtrace dump --stacks` does. That is only
  // valid after load_stacks(): it sizes its module table from the store at construction, and
  // next() must then add no module the skip-scan did not already find.
  SymbolizerOptions opt;
  opt.sysroot = "/nonexistent";  // never open a real object file named by the input
  Symbolizer early(reader->stacks(), opt);

  // JSON is done for the first records and stacks only: it is a thin layer over nlohmann::json,
  // and doing it for every record of a large input costs most of the fuzzer's time.
  constexpr uint64_t kJsonRecords = 64;
  constexpr size_t kJsonStacks = 16;
  std::set<uint32_t> seen;
  Record r;
  uint64_t records = 0;
  while (reader->next(&r)) {
    bool json = records++ < kJsonRecords;
    if (r.is_event()) {
      if (json) consume(event_json(r));
      if (r.stack && seen.insert(r.stack).second && seen.size() <= kJsonStacks)
        consume_stack(early.stack(r.stack));
    } else if (json) {
      consume(meta_json(r));
    }
  }
  Record after;
  if (reader->next(&after)) abort();  // stays at the end

  for (const std::string& p : reader->problems()) g_sink = g_sink + p.size();
  g_sink = g_sink + reader->data_lost() + reader->record_bytes() + reader->file_size();
  consume(process_json(reader->process()));

  // A fresh symbolizer over the complete store: every stack id the events named, and every
  // stack the file holds.
  const StackStore& store = reader->stacks();
  store.stacks.for_each([&](uint32_t id, const vt::analyzer::StackFrames::Frames&) { seen.insert(id); });
  Symbolizer sym(store, opt);
  size_t n = 0;
  for (uint32_t id : seen) {
    const std::vector<Frame>& frames = sym.stack(id);
    if (n++ < kJsonStacks) consume_stack(frames);
    g_sink = g_sink + frames.size();
  }
  for (uint32_t id : seen) g_sink = g_sink + sym.stack(id).size();  // the cached path

  // The whole report over the same bytes, as `vramtrace report` does: the replay (live state,
  // pools, VMM, peaks, growth, OOM verdicts), kernel activity and both renderings.
  AnalysisOptions aopt;
  aopt.symbols = opt;
  aopt.top = 4;
  aopt.at_ns = 1000;  // the live set at 1 us: the live-at aggregator too
  TraceReport rep;
  std::string aerr;
  if (analyze_trace(file->path, aopt, &rep, &aerr)) {
    consume(report_json(rep));
    g_sink = g_sink + report_text(rep).size();
    consume(summary_json(rep));
    g_sink = g_sink + summary_text(rep).size();

    JobReport job;
    job.traces = {rep};
    job.unreadable = {rep};
    job.unreadable[0].unreadable = true;
    consume(job_json(job));
    g_sink = g_sink + job_text(job).size();
    consume(job_summary_json(job));
    g_sink = g_sink + job_summary_text(job).size();

    // diff: against nothing both ways and against itself (sizes near 2^64 must not overflow).
    TraceReport none;
    for (const auto& [a, b] : {std::pair<const TraceReport*, const TraceReport*>{&none, &rep}, {&rep, &none}, {&rep, &rep}}) {
      RunDiff d = diff_runs(*a, *b);
      consume(diff_json(d, "base", "new"));
      g_sink = g_sink + diff_text(d).size();
    }
    // check: every limit, tight, with this trace as its own baseline and with an empty one.
    GateLimits lim;
    lim.has_max_peak = lim.has_max_leak = lim.no_oom = true;
    lim.max_peak = lim.max_leak = 1;
    lim.max_peak_growth = lim.max_site_growth = 0;
    for (const std::vector<TraceReport>& base : {std::vector<TraceReport>{rep}, std::vector<TraceReport>{none}}) {
      std::vector<Violation> v = judge_gate({rep}, base, lim);
      g_sink = g_sink + gate_text(v, 1, rep.damaged(), 0, false).size();
      consume(gate_json(v, problems_json(job_problems(job)), true));
    }
    // export --folded, peak and leaks.
    g_sink = g_sink + folded_peak(rep).size() + folded_leaks(rep).size();
  } else if (aerr.empty()) {
    abort();  // a refusal always says why
  }

  // export --perfetto (its own pass over the file): tight aggregation so every branch is drawn.
  PerfettoOptions popt;
  popt.symbolizer = opt;
  popt.counter_interval_ns = 1;
  popt.alloc_threshold_bytes = 1;
  popt.min_slice_ns = 1000;
  std::ostringstream perfetto;
  PerfettoStats stats;
  std::string perr;
  if (!export_perfetto(file->path, perfetto, popt, &stats, &perr) && perr.empty()) abort();
  g_sink = g_sink + perfetto.str().size() + stats.instants;
  return 0;
}
