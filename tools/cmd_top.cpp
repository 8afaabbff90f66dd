// `vramtrace top [--interval S] [--once]`: each GPU's memory (total, per process, free) from
// NVML, and for processes traced by vramtrace their live bytes by kind and their top call sites
// right now, read from each process's shared-memory summary (format/shm_layout.h: only the
// caller's own, live ones; stale ones are removed) and symbolized from its trace. Every string
// shown (paths, GPU and process names, frames) is escaped for the terminal. Refreshes in place on
// a terminal; --once prints one snapshot.
#include <dirent.h>
#include <pwd.h>
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
#include "byte_size.h"
#include "shm_layout.h"
#include "symbolizer.h"
#include "terminal_escape.h"
#include "trace_reader.h"

namespace vt::cli {

namespace {

using namespace format;  // the summary's layout: ShmSummary, kShm*, inspect_shm_entry

std::string e(const std::string& s) { return analyzer::terminal_escape(s); }

// A summary's byte counts are the writer's; a negative one (never written by vramtrace) shows as 0.
std::string bytes(int64_t v) { return format_bytes(v > 0 ? uint64_t(v) : 0); }

std::string user_name(uid_t uid) {
  struct passwd pw, *res = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return pw.pw_name;
  return "uid " + std::to_string(uid);
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
  if (gpus.empty()) o << "GPUs: " << e(why) << "\n";
  for (const GpuInfo& g : gpus) {
    o << "GPU " << g.index << "  " << e(g.name) << "   used " << format_bytes(g.used) << " of " << format_bytes(g.total)
      << ", free " << format_bytes(g.free) << "\n";
    for (const GpuProcessInfo& p : g.processes)
      o << "    pid " << p.pid << "  " << (p.name.empty() ? "?" : e(p.name)) << "  " << format_bytes(p.bytes) << "\n";
  }

  // Summaries in /dev/shm (format/shm_layout.h): only this user's regular files of the
  // right size and version whose writer still holds its lock; stale ones are removed.
  uid_t uid = geteuid();
  std::string user = user_name(uid);
  o << "\nTRACED PROCESSES (vramtrace; user " << e(user) << (uid == 0 ? ", root: other users' summaries are not read" : "")
    << ")\n";
  int shown = 0, foreign = 0;
  uint64_t my_ns = pid_namespace_id();
  if (DIR* d = opendir(kShmDir)) {
    std::vector<std::string> names;
    while (dirent* ent = readdir(d))
      if (strncmp(ent->d_name, kShmPrefix, sizeof kShmPrefix - 1) == 0 ||
          strncmp(ent->d_name, kShmTempPrefix, sizeof kShmTempPrefix - 1) == 0)
        names.push_back(ent->d_name);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      ShmSummary s;
      ShmState state = inspect_shm_entry(dirfd(d), n.c_str(), uid, &s);
      if (state == ShmState::kStale) remove_stale_shm_entry(dirfd(d), n.c_str());
      if (state == ShmState::kForeign) ++foreign;
      if (state != ShmState::kLive || n.compare(0, sizeof kShmTempPrefix - 1, kShmTempPrefix) == 0) continue;
      ++shown;
      o << "  pid " << s.pid << (s.pid_namespace && my_ns && s.pid_namespace != my_ns ? " (another pid namespace)" : "")
        << "  " << e(s.trace_path) << "\n";
      for (int dev = 0; dev < kTrackedDevices; ++dev) {
        const int64_t* l = s.live[dev];
        auto at = [l](Bucket b) { return l[int(b)]; };
        if (std::all_of(l, l + kBuckets, [](int64_t v) { return v == 0; }) && !s.peak[dev]) continue;
        o << "    device " << dev << ": " << bytes(at(Bucket::Device)) << " live (peak " << bytes(s.peak[dev]) << ")";
        if (at(Bucket::PinnedHost)) o << ", pinned host " << bytes(at(Bucket::PinnedHost));
        if (at(Bucket::Managed)) o << ", managed " << bytes(at(Bucket::Managed));
        if (at(Bucket::Imported)) o << ", imported " << bytes(at(Bucket::Imported));
        o << "\n";
      }
      bool header = false;
      for (const ShmSummary::Site& site : s.top) {
        if (site.bytes <= 0) break;
        if (!header) o << "    top call sites:\n";
        header = true;
        o << "      " << bytes(site.bytes) << "  " << e(label(cache, s.trace_path, site.stack)) << "\n";
      }
    }
    closedir(d);
  }
  if (!shown) o << "  none (start one with `vramtrace run -- CMD`)\n";
  if (foreign) o << "  (" << foreign << " summar" << (foreign == 1 ? "y" : "ies") << " of other users not shown)\n";
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
