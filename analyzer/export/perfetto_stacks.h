// The Perfetto export's call stacks, each written once: the trace-event format's top-level
// "stackFrames" dictionary, a prefix tree (every node names one frame and its caller's node as
// "parent"), with events pointing at their innermost frame by "sf". Stacks that share callers
// share nodes, so a stack costs one id per event and its new frames once per export. Owns the
// interning (trace stack id -> node, (parent, frame) -> node) and the dictionary's text.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "symbolizer.h"

namespace vt::analyzer {

class PerfettoStacks {
 public:
  PerfettoStacks(Symbolizer& symbolizer, size_t max_frames) : sym_(symbolizer), max_frames_(max_frames) {}

  // The node of the innermost frame of trace stack `stack_id` (its innermost max_frames frames),
  // interned on first use; 0 for no stack (node ids start at 1).
  uint32_t leaf(uint32_t stack_id);

  // "function (file:line)" or "function [module+0xOFFSET]": one frame's name in the dictionary.
  static std::string frame_name(const Frame& f);

  // The "stackFrames" value: {"1":{"name":...,"category":...},"2":{...,"parent":"1"},...}.
  void write(std::ostream& out) const;
  size_t nodes() const { return nodes_.size(); }

 private:
  struct Node {
    uint32_t parent;
    std::string name, category;
  };
  Symbolizer& sym_;
  size_t max_frames_;
  std::unordered_map<uint32_t, uint32_t> by_stack_;
  std::unordered_map<std::string, uint32_t> by_edge_;  // parent id + '\0' + frame name -> node
  std::vector<Node> nodes_;                            // node id - 1
};

}  // namespace vt::analyzer
