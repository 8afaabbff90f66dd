// See top_screen.h.
#include "top_screen.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "compare.h"
#include "byte_size.h"
#include "terminal.h"
#include "terminal_escape.h"

namespace vt::tui {

namespace {


std::string e(const std::string& s) { return analyzer::terminal_escape(s); }

// Columns of a UTF-8 string (one per code point: what the escaped strings hold).
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

// `s` cut or padded to exactly `width` columns.
std::string fit(const std::string& s, size_t width) {
  std::string out;
  size_t cols = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    bool starts = (c & 0xc0) != 0x80;
    if (starts && cols == width) break;
    out += char(c);
    cols += starts;
  }
  return out + std::string(width - cols, ' ');
}

std::string pad(const std::string& s, size_t width) { return columns(s) >= width ? s + " " : fit(s, width); }

// The frames of a site that name something, outermost first, without the C library's start-up.
std::vector<std::string> path_of(const cli::TracedSite& site) {
  std::vector<std::string> out;
  for (auto it = site.frames.rbegin(); it != site.frames.rend(); ++it) {
    const analyzer::Frame& f = *it;
    if (f.function == "??" && f.module.empty()) continue;
    if (f.function == "_start" || f.function.rfind("__libc_start", 0) == 0) continue;
    std::string label = f.function == "??" ? "?? in " + f.module.substr(f.module.rfind('/') + 1) : f.function;
    if (f.python) label = "[py] " + label;
    if (!f.file.empty()) label += " (" + f.file.substr(f.file.rfind('/') + 1) + ":" + std::to_string(f.line) + ")";
    out.push_back(label);
  }
  if (out.empty()) out.push_back(site.label);
  return out;
}

struct Node {
  std::string label;
  uint64_t bytes = 0;
  bool site = false;  // a site ends here
  std::map<std::string, Node> children;
};

void add_rows(const Node& n, const std::string& key, const std::string& parent, int depth, const TopScreen* screen,
              std::vector<TopScreen::Row>* out, const std::function<bool(const std::string&, int)>& is_open) {
  // A chain without a branch is one row: "a > b > c", or "a > ... > z (N frames)" when long.
  const Node* end = &n;
  std::vector<const Node*> chain = {&n};
  while (!end->site && end->children.size() == 1) {
    end = &end->children.begin()->second;
    chain.push_back(end);
  }
  std::string label;
  if (chain.size() <= 3) {
    for (const Node* c : chain) label += (label.empty() ? "" : " > ") + c->label;
  } else {
    label = chain.front()->label + " > ... > " + chain.back()->label + " (" + std::to_string(chain.size()) + " frames)";
  }
  std::string k = key;
  for (size_t i = 1; i < chain.size(); ++i) k += "/" + chain[i]->label;
  TopScreen::Row r;
  r.key = k;
  r.parent = parent;
  r.depth = depth;
  r.openable = !end->children.empty();
  r.open = r.openable && is_open(k, depth);
  r.text = pad(format_bytes(n.bytes), 11) + std::string(size_t(depth) * 2, ' ') + (r.openable ? (r.open ? "[-] " : "[+] ") : "    ") +
           e(label);
  out->push_back(r);
  if (!r.open) return;
  std::vector<const Node*> kids;
  for (const auto& [name, c] : end->children) kids.push_back(&c);
  std::stable_sort(kids.begin(), kids.end(), [](const Node* a, const Node* b) { return a->bytes > b->bytes; });
  for (const Node* c : kids) add_rows(*c, k + "/" + c->label, k, depth + 1, screen, out, is_open);
}

const char* sort_name(TopScreen::Sort s) {
  return s == TopScreen::Sort::Live ? "live" : s == TopScreen::Sort::Peak ? "peak" : "pid";
}

}  // namespace

bool TopScreen::is_open(const std::string& key, int depth) const {
  if (opened_.count(key)) return true;
  if (closed_.count(key)) return false;
  return depth <= 1;  // processes and the first level of their trees start open
}

std::vector<TopScreen::Row> TopScreen::rows(const cli::TopSnapshot& snap) const {
  std::vector<const cli::TracedProcess*> procs;
  for (const cli::TracedProcess& p : snap.processes) procs.push_back(&p);
  std::stable_sort(procs.begin(), procs.end(), [this](const cli::TracedProcess* a, const cli::TracedProcess* b) {
    if (sort_ == Sort::Pid) return a->pid < b->pid;
    uint64_t x = sort_ == Sort::Live ? a->live() : a->peak(), y = sort_ == Sort::Live ? b->live() : b->peak();
    return x != y ? x > y : a->pid < b->pid;
  });
  auto open = [this](const std::string& k, int depth) { return is_open(k, depth); };
  std::vector<Row> out;
  for (const cli::TracedProcess* p : procs) {
    uint64_t pinned = 0, managed = 0;
    for (const cli::TracedDevice& d : p->devices) pinned += d.pinned_host, managed += d.managed;
    Row r;
    r.key = "p" + std::to_string(p->pid);
    r.openable = !p->sites.empty();
    r.open = r.openable && is_open(r.key, 0);
    char pid[32];
    snprintf(pid, sizeof pid, "%-8llu", static_cast<unsigned long long>(p->pid));
    r.text = std::string(r.openable ? (r.open ? "[-] " : "[+] ") : "    ") + pid + pad(format_bytes(p->live()), 11) +
             pad(format_bytes(p->peak()), 11) + pad(format_bytes(pinned), 11) + pad(format_bytes(managed), 11) +
             (p->other_namespace ? "(other pid ns) " : "") + e(p->trace_path);
    out.push_back(r);
    if (!r.open) continue;
    Node root;
    for (const cli::TracedSite& s : p->sites) {
      Node* n = &root;
      for (const std::string& label : path_of(s)) {
        Node& c = n->children[label];
        c.label = label;
        c.bytes = analyzer::add_bytes(c.bytes, s.bytes);
        n = &c;
      }
      n->site = true;
    }
    std::vector<const Node*> kids;
    for (const auto& [name, c] : root.children) kids.push_back(&c);
    std::stable_sort(kids.begin(), kids.end(), [](const Node* a, const Node* b) { return a->bytes > b->bytes; });
    for (const Node* c : kids) add_rows(*c, r.key + "/" + c->label, r.key, 1, this, &out, open);
  }
  return out;
}

std::string TopScreen::render(const cli::TopSnapshot& snap, int width, int height) {
  size_t w = size_t(std::max(width, 20));
  std::vector<std::string> lines;  // plain text; the selection is marked when the frame is built
  char head[160];
  snprintf(head, sizeof head, "vramtrace top  %s  every %.1f s%s  sort: %s", snap.when.c_str(), interval_s_,
           paused_ ? " (paused)" : "", sort_name(sort_));
  lines.push_back(head);
  lines.push_back("keys: up/down select  right/enter open  left close  s sort  p pause  q quit");
  lines.push_back("");
  if (snap.gpus.empty()) lines.push_back("GPUs: " + e(snap.gpus_why));
  for (const cli::GpuInfo& g : snap.gpus) {
    size_t bar = 20, used = g.total ? size_t(double(g.used) / double(g.total) * bar + 0.5) : 0;
    used = std::min(used, bar);
    lines.push_back("GPU " + std::to_string(g.index) + "  " + e(g.name) + "  [" + std::string(used, '#') +
                    std::string(bar - used, '.') + "]  used " + format_bytes(g.used) + " of " + format_bytes(g.total) +
                    ", free " + format_bytes(g.free));
    std::vector<cli::GpuProcessInfo> ps = g.processes;
    std::stable_sort(ps.begin(), ps.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
    for (const cli::GpuProcessInfo& p : ps)
      lines.push_back("    pid " + std::to_string(p.pid) + "  " + pad(format_bytes(p.bytes), 11) + (p.name.empty() ? "?" : e(p.name)));
  }
  lines.push_back("");
  lines.push_back("TRACED PROCESSES (user " + e(snap.user) + (snap.root ? ", root: other users' summaries are not read" : "") +
                  (snap.foreign ? "; " + std::to_string(snap.foreign) + " of other users not shown" : "") + ")");
  lines.push_back("    PID     LIVE       PEAK       PINNED     MANAGED    TRACE / CALL SITES");

  last_rows_ = rows(snap);
  if (last_rows_.empty()) {
    selected_.clear();
    lines.push_back("    none (start one with `vramtrace run -- CMD`)");
  }
  // The selection follows its row across refreshes; when the row is gone, its parent, else the first.
  size_t sel = 0;
  bool found = false;
  for (size_t i = 0; i < last_rows_.size() && !found; ++i)
    if (last_rows_[i].key == selected_) sel = i, found = true;
  if (!found && !last_rows_.empty()) {
    std::string want = selected_;
    while (!found && !want.empty()) {
      size_t slash = want.rfind('/');
      want = slash == std::string::npos ? "" : want.substr(0, slash);
      for (size_t i = 0; i < last_rows_.size() && !found; ++i)
        if (last_rows_[i].key == want) sel = i, found = true;
    }
    selected_ = last_rows_[sel].key;
  }
  size_t room = size_t(std::max(1, height)) > lines.size() ? size_t(height) - lines.size() : 1;
  page_ = int(room);
  if (sel < top_) top_ = sel;
  if (sel >= top_ + room) top_ = sel - room + 1;
  if (top_ + room > last_rows_.size()) top_ = last_rows_.size() > room ? last_rows_.size() - room : 0;

  std::string frame;
  size_t n = 0;
  for (const std::string& l : lines) {
    if (n + 1 >= size_t(height)) break;
    frame += (n == 0 ? "\033[1m" + fit(l, w) + "\033[0m" : fit(l, w)) + "\r\n";
    ++n;
  }
  for (size_t i = top_; i < last_rows_.size() && n < size_t(height); ++i, ++n) {
    std::string t = fit(last_rows_[i].text, w);
    frame += (i == sel ? "\033[7m" + t + "\033[0m" : t);
    if (n + 1 < size_t(height)) frame += "\r\n";
  }
  for (; n < size_t(height); ++n) frame += std::string(w, ' ') + (n + 1 < size_t(height) ? "\r\n" : "");
  return frame;
}

TopScreen::Action TopScreen::key(int k) {
  size_t sel = 0;
  for (size_t i = 0; i < last_rows_.size(); ++i)
    if (last_rows_[i].key == selected_) sel = i;
  auto select = [&](size_t i) {
    if (!last_rows_.empty()) selected_ = last_rows_[std::min(i, last_rows_.size() - 1)].key;
    return Action::Redraw;
  };
  const Row* row = last_rows_.empty() ? nullptr : &last_rows_[sel];
  switch (k) {
    case 'q': case 'Q': case kQuit: return Action::Quit;
    case kUp: case 'k': return select(sel > 0 ? sel - 1 : 0);
    case kDown: case 'j': return select(sel + 1);
    case kPageUp: return select(sel > size_t(page_) ? sel - size_t(page_) : 0);
    case kPageDown: return select(sel + size_t(page_));
    case kHome: case 'g': return select(0);
    case kEnd: case 'G': return select(last_rows_.empty() ? 0 : last_rows_.size() - 1);
    case kRight: case kEnter: case 'l': case ' ':
      if (row && row->openable && !row->open) {
        closed_.erase(row->key);
        opened_.insert(row->key);
      } else if (row && row->open && k != kRight && k != 'l') {  // Enter/space toggle
        opened_.erase(row->key);
        closed_.insert(row->key);
      }
      return Action::Redraw;
    case kLeft: case 'h':
      if (row && row->open) {
        opened_.erase(row->key);
        closed_.insert(row->key);
      } else if (row && !row->parent.empty()) {
        selected_ = row->parent;
      }
      return Action::Redraw;
    case 's': case 'S':
      sort_ = sort_ == Sort::Live ? Sort::Peak : sort_ == Sort::Peak ? Sort::Pid : Sort::Live;
      return Action::Redraw;
    case 'p': case 'P':
      paused_ = !paused_;
      return paused_ ? Action::Redraw : Action::Refresh;
    case 'r': case kResize: return k == 'r' ? Action::Refresh : Action::Redraw;
  }
  return Action::None;
}

}  // namespace vt::tui
