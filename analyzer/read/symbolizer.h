// Offline symbolization: stack ids from a trace become frames with function (demangled), source
// file, line, module and inlined callers, using the trace's module map and build-ids with elfutils
// (libdwfl), and Python frames with file, line and qualified name from the recorded code objects.
// Python frames are spliced into the native stack where the interpreter's eval loop ran them.
// A frame that cannot be resolved keeps its module+offset; it never disappears. Module files are
// opened without blocking and only when they are regular files (a FIFO or a device named by a
// trace is simply not symbolized); modules are found by address in O(log n) (a sorted index of
// the address ranges, the latest record winning where they overlap). A module of the traced build
// (its build-id) is opened once for the whole process and shared by the Symbolizers of every
// trace that loaded it, whatever its load address (shared_modules.h); the frames it names are
// kept once per build too (shared_symbols.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace_reader.h"

namespace vt::analyzer {

struct Frame {
  std::string function;  // demangled; "??" when unknown
  std::string file;      // source file, empty when unknown
  int line = 0;
  std::string module;    // object file path, or "python"
  uint64_t offset = 0;   // address relative to the module's load bias (native frames)
  bool python = false;
  bool inlined = false;  // an inlined call inside the next (outer) frame
};

struct SymbolizerOptions {
  std::string sysroot;                  // prefix for module paths (analysing on another machine)
  std::vector<std::string> debug_dirs;  // searched for separate debug info (also by build-id)
  // Told once per module whose frames cannot be named: its file is missing or unreadable, or it
  // is another build than the traced one (build-id). The message names the file.
  std::function<void(const std::string&)> warn;
};

class Symbolizer {
 public:
  Symbolizer(const StackStore& store, SymbolizerOptions opt = {});
  ~Symbolizer();

  // Frames of a stack id, innermost first (cached). Unknown ids give an empty stack.
  const std::vector<Frame>& stack(uint32_t id);

  // Native frames for one return address (innermost inlined frame first).
  std::vector<Frame> native(uint64_t address);

 private:
  struct ModuleDebug;
  struct Segment {  // [lo, hi) is covered by store_.modules[module]
    uint64_t lo, hi;
    size_t module;
  };
  // The module record covering `address` (an index into store_.modules), or -1.
  long module_index(uint64_t address);
  ModuleDebug* module_for(uint64_t address);
  ModuleDebug* open_module(size_t index);
  void index_modules();
  std::vector<Frame> python_frame(uint64_t frame);

  const StackStore& store_;
  SymbolizerOptions opt_;
  std::string debuginfo_path_;
  std::vector<std::unique_ptr<ModuleDebug>> modules_;  // by index into store_.modules, opened lazily
  std::vector<Segment> segments_;  // disjoint, by address: which module record wins where
  size_t indexed_ = ~size_t(0);    // store_.modules.size() when segments_ was built
  std::unordered_map<uint32_t, std::vector<Frame>> cache_;
  std::unordered_map<uint64_t, std::vector<Frame>> address_cache_;
};

}  // namespace vt::analyzer
