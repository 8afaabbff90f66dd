// `vramtrace top [--interval S] [--once]`: each GPU's memory (total, per process, free) from
// NVML, and for processes traced by vramtrace their live bytes by kind and their top call sites
// right now, read from each process's shared-memory summary (interpose/shm_summary.h) and
// symbolized from its trace. Refreshes in place on a terminal; --once prints one snapshot.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "commands.h"
#include "compare.h"
#include "gpu_info.h"
#include "oom_verdict.h"
#include "shm_summary.h"
#include "symbolizer.h"
#include "trace_reader.h"

namespace vt::cli {

namespace {

using analyzer::human_bytes;

bool read_summary(const std::string& name, ShmSummary* out) {
  int fd = shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  void* m = mmap(nullptr, sizeof(ShmSummary), PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return false;
  const auto* s = static_cast<const ShmSummary*>(m);
  bool ok = false;
  for (int attempt = 0; attempt < 100 && !ok; ++attempt) {  // sequence lock: retry a torn read
    uint64_t a = s->seq.load(std::memory_order_acquire);
    if (a & 1) continue;
    memcpy(static_cast<void*>(out), static_cast<const void*>(s), sizeof(ShmSummary));
    ok = s->seq.load(std::memory_order_acquire) == a;
  }
  munmap(m, sizeof(ShmSummary));
  return ok && memcmp(out->magic, "VTSHM01", 8) == 0 && out->version == 1;
}

// Stack labels per trace, cached: traces only grow.
struct Labels {
  std::unique_ptr<analyzer::TraceReader> reader;
  std::unique_ptr<analyzer::Symbolizer> sym;
};

std::string label(std::map<std::string, Labels>& cache, const std::string& trace, uint32_t stack) {
  Labels& l = cache[trace];
  bool missing = !l.reader || !l.reader->stacks().stacks.count(stack);
  if (missing) {  // (re)load: the stack may be newer than what we read last time
    std::string err;
    l.sym.reset();
    l.reader = analyzer::TraceReader::open(trace, &err);
    if (!l.reader) return "stack " + std::to_string(stack);
    l.reader->load_stacks();
    l.sym = std::make_unique<analyzer::Symbolizer>(l.reader->stacks());
  }
  return analyzer::site_label(l.sym->stack(stack), 1);
}

std::string snapshot(std::map<std::string, Labels>& cache) {
  std::ostringstream o;
  std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%F %T", std::localtime(&now));
  o << "vramtrace top  " << when << "\n\n";

  std::string why;
  std::vector<GpuInfo> gpus = read_gpus(&why);
  if (gpus.empty()) o << "GPUs: " << why << "\n";
  for (const GpuInfo& g : gpus) {
    o << "GPU " << g.index << "  " << g.name << "   used " << human_bytes(g.used) << " of " << human_bytes(g.total)
      << ", free " << human_bytes(g.free) << "\n";
    for (const GpuProcessInfo& p : g.processes)
      o << "    pid " << p.pid << "  " << (p.name.empty() ? "?" : p.name) << "  " << human_bytes(p.bytes) << "\n";
  }

  o << "\nTRACED PROCESSES (vramtrace)\n";
  int shown = 0;
  if (DIR* d = opendir("/dev/shm")) {
    std::vector<std::string> names;
    while (dirent* e = readdir(d))
      if (strncmp(e->d_name, "vramtrace.", 10) == 0) names.push_back(std::string("/") + e->d_name);
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      ShmSummary s;
      if (!read_summary(n, &s)) continue;
      if (kill(pid_t(s.pid), 0) != 0 && errno == ESRCH) continue;  // left by a process that died
      ++shown;
      o << "  pid " << s.pid << "  " << s.trace_path << "\n";
      for (int dev = 0; dev < 16; ++dev) {
        const int64_t* l = s.live[dev];
        if (!l[0] && !l[1] && !l[2] && !l[3] && !s.peak[dev]) continue;
        o << "    device " << dev << ": " << human_bytes(uint64_t(l[0])) << " live (peak " << human_bytes(uint64_t(s.peak[dev]))
          << ")";
        if (l[2]) o << ", pinned host " << human_bytes(uint64_t(l[2]));
        if (l[1]) o << ", managed " << human_bytes(uint64_t(l[1]));
        if (l[3]) o << ", imported " << human_bytes(uint64_t(l[3]));
        o << "\n";
      }
      bool header = false;
      for (const ShmSummary::Site& site : s.top) {
        if (site.bytes <= 0) break;
        if (!header) o << "    top call sites:\n";
        header = true;
        o << "      " << human_bytes(uint64_t(site.bytes)) << "  " << label(cache, s.trace_path, site.stack) << "\n";
      }
    }
  }
  if (!shown) o << "  none (start one with `vramtrace run -- CMD`)\n";
  return o.str();
}

}  // namespace

int top_command(double interval, bool once) {
  if (interval < 0.1 || interval > 3600) {
    error_line("--interval must be between 0.1 and 3600 seconds");
    return 2;
  }
  std::map<std::string, Labels> cache;
  bool tty = isatty(STDOUT_FILENO);
  for (;;) {
    std::string s = snapshot(cache);
    if (tty && !once) std::cout << "\033[H\033[2J";  // redraw in place
    std::cout << s << std::flush;
    if (once) return 0;
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
}

}  // namespace vt::cli
