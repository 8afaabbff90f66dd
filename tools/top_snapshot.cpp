// See top_snapshot.h.
#include "top_snapshot.h"

#include <dirent.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <sstream>

#include "byte_size.h"
#include "compare.h"
#include "shm_layout.h"
#include "terminal_escape.h"

namespace vt::cli {

namespace {

using namespace format;  // the summary's layout: ShmSummary, kShm*, inspect_shm_entry

std::string e(const std::string& s) { return analyzer::terminal_escape(s); }

// A summary's byte counts are the writer's; a negative one (never written by vramtrace) is 0.
uint64_t count(int64_t v) { return v > 0 ? uint64_t(v) : 0; }

std::string user_name(uid_t uid) {
  struct passwd pw, *res = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return pw.pw_name;
  return "uid " + std::to_string(uid);
}

}  // namespace

uint64_t TracedProcess::live() const {
  uint64_t n = 0;
  for (const TracedDevice& d : devices) n = analyzer::add_bytes(n, d.live);
  return n;
}

uint64_t TracedProcess::peak() const {
  uint64_t n = 0;
  for (const TracedDevice& d : devices) n = analyzer::add_bytes(n, d.peak);
  return n;
}

const std::vector<analyzer::Frame>* TopSource::frames(const std::string& trace, uint32_t stack) {
  Labels& l = cache_[trace];
  if (!l.reader || !l.reader->stacks().stacks.contains(stack)) {  // (re)load: the stack may be newer
    std::string err;
    l.sym.reset();
    l.reader = analyzer::TraceReader::open(trace, &err);
    if (!l.reader) return nullptr;
    l.reader->load_stacks();
    l.sym = std::make_unique<analyzer::Symbolizer>(l.reader->stacks());
  }
  return &l.sym->stack(stack);
}

TopSnapshot TopSource::take() {
  TopSnapshot snap;
  std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%F %T", std::localtime(&now));
  snap.when = when;
  snap.gpus = read_gpus(&snap.gpus_why);

  uid_t uid = geteuid();
  snap.user = user_name(uid);
  snap.root = uid == 0;
  uint64_t my_ns = pid_namespace_id();
  DIR* d = opendir(kShmDir);
  if (!d) return snap;
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
    if (state == ShmState::kForeign) ++snap.foreign;
    if (state != ShmState::kLive || n.compare(0, sizeof kShmTempPrefix - 1, kShmTempPrefix) == 0) continue;
    TracedProcess p;
    p.pid = s.pid;
    p.other_namespace = s.pid_namespace && my_ns && s.pid_namespace != my_ns;
    p.trace_path = s.trace_path;
    for (int dev = 0; dev < kTrackedDevices; ++dev) {
      const int64_t* l = s.live[dev];
      auto at = [l](Bucket b) { return count(l[int(b)]); };
      if (std::all_of(l, l + kBuckets, [](int64_t v) { return v == 0; }) && !s.peak[dev]) continue;
      p.devices.push_back({dev, at(Bucket::Device), count(s.peak[dev]), at(Bucket::Managed), at(Bucket::PinnedHost),
                           at(Bucket::Imported)});
    }
    for (const ShmSummary::Site& site : s.top) {
      if (site.bytes <= 0) break;
      TracedSite t;
      t.stack = site.stack;
      t.device = site.device;
      t.bytes = uint64_t(site.bytes);
      const std::vector<analyzer::Frame>* f = frames(p.trace_path, site.stack);
      if (f) t.frames = *f;
      t.label = f ? analyzer::site_label(*f, 1) : "stack " + std::to_string(site.stack);
      p.sites.push_back(std::move(t));
    }
    snap.processes.push_back(std::move(p));
  }
  closedir(d);
  return snap;
}

std::string top_text(const TopSnapshot& s) {
  std::ostringstream o;
  o << "vramtrace top  " << s.when << "\n\n";
  if (s.gpus.empty()) o << "GPUs: " << e(s.gpus_why) << "\n";
  for (const GpuInfo& g : s.gpus) {
    o << "GPU " << g.index << "  " << e(g.name) << "   used " << format_bytes(g.used) << " of " << format_bytes(g.total)
      << ", free " << format_bytes(g.free) << "\n";
    for (const GpuProcessInfo& p : g.processes)
      o << "    pid " << p.pid << "  " << (p.name.empty() ? "?" : e(p.name)) << "  " << format_bytes(p.bytes) << "\n";
  }
  o << "\nTRACED PROCESSES (vramtrace; user " << e(s.user) << (s.root ? ", root: other users' summaries are not read" : "")
    << ")\n";
  for (const TracedProcess& p : s.processes) {
    o << "  pid " << p.pid << (p.other_namespace ? " (another pid namespace)" : "") << "  " << e(p.trace_path) << "\n";
    for (const TracedDevice& d : p.devices) {
      o << "    device " << d.index << ": " << format_bytes(d.live) << " live (peak " << format_bytes(d.peak) << ")";
      if (d.pinned_host) o << ", pinned host " << format_bytes(d.pinned_host);
      if (d.managed) o << ", managed " << format_bytes(d.managed);
      if (d.imported) o << ", imported " << format_bytes(d.imported);
      o << "\n";
    }
    if (!p.sites.empty()) o << "    top call sites:\n";
    for (const TracedSite& t : p.sites) o << "      " << format_bytes(t.bytes) << "  " << e(t.label) << "\n";
  }
  if (s.processes.empty()) o << "  none (start one with `vramtrace run -- CMD`)\n";
  if (s.foreign) o << "  (" << s.foreign << " summar" << (s.foreign == 1 ? "y" : "ies") << " of other users not shown)\n";
  return o.str();
}

}  // namespace vt::cli
