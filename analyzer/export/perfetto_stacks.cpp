// See perfetto_stacks.h.
#include "perfetto_stacks.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "terminal_escape.h"

namespace vt::analyzer {

namespace {
std::string quote(const std::string& s) { return json_string(s); }  // (terminal_escape.h)
std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
}  // namespace

std::string PerfettoStacks::frame_name(const Frame& f) {
  std::string s = f.function;
  if (!f.file.empty()) {
    s += " (" + f.file + ":" + std::to_string(f.line) + ")";
  } else if (!f.module.empty()) {
    char off[24];
    snprintf(off, sizeof off, "+0x%llx]", (unsigned long long)f.offset);
    s += " [" + f.module + off;
  }
  return s;
}

uint32_t PerfettoStacks::leaf(uint32_t stack_id) {
  if (!stack_id) return 0;
  auto hit = by_stack_.find(stack_id);
  if (hit != by_stack_.end()) return hit->second;
  const std::vector<Frame>& frames = sym_.stack(stack_id);  // innermost first
  size_t n = std::min(frames.size(), max_frames_);
  uint32_t node = 0;
  for (size_t i = n; i-- > 0;) {  // from the outermost kept frame inwards
    std::string name = frame_name(frames[i]);
    std::string key = std::to_string(node);
    key += '\0';
    key += name;
    auto [it, fresh] = by_edge_.try_emplace(std::move(key), uint32_t(nodes_.size() + 1));
    if (fresh) nodes_.push_back({node, std::move(name), frames[i].python ? "python" : base_name(frames[i].module)});
    node = it->second;
  }
  by_stack_.emplace(stack_id, node);
  return node;
}

void PerfettoStacks::write(std::ostream& out) const {
  out << '{';
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    out << (i ? ",\n\"" : "\n\"") << (i + 1) << "\":{\"name\":" << quote(n.name) << ",\"category\":" << quote(n.category);
    if (n.parent) out << ",\"parent\":\"" << n.parent << '"';
    out << '}';
  }
  out << "\n}";
}

}  // namespace vt::analyzer
