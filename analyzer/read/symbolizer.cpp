// See symbolizer.h.
#include "symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <queue>

#include "activity.h"
#include "python_lines.h"
#include "regular_file.h"
#include "shared_modules.h"
#include "shared_symbols.h"

namespace vt::analyzer {

namespace fmt = vt::format;

struct Symbolizer::ModuleDebug {
  size_t index = 0;  // into store_.modules (which may grow: no pointer into it is kept)
  std::unique_ptr<DwflHandle> own;  // opened for this Symbolizer alone
  SharedModule* shared = nullptr;   // or the process's handle for this build (shared_modules.h)
  DwflHandle* handle() const { return shared ? shared->handle.get() : own.get(); }
  Dwfl_Module* mod() const { return handle() ? handle()->mod : nullptr; }
};

namespace {

// Only mangled names (_Z...) are demangled (activity.h's rule): a C function named `f` or `i` is
// itself, not `float` or `int`.
std::string demangle(const char* name) { return name ? vt::analyzer::demangle(std::string(name)) : "??"; }

std::string to_hex(const unsigned char* b, int n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < n; ++i) {
    s += digits[b[i] >> 4];
    s += digits[b[i] & 15];
  }
  return s;
}

// The function a scope DIE stands for, through abstract origins and specifications.
std::string die_function(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Die origin;
  Dwarf_Die* d = die;
  for (int hops = 0; hops < 4; ++hops) {
    const char* linkage = nullptr;
    if (dwarf_attr(d, DW_AT_linkage_name, &attr) || dwarf_attr(d, DW_AT_MIPS_linkage_name, &attr))
      linkage = dwarf_formstring(&attr);
    if (linkage) return demangle(linkage);
    if (const char* name = dwarf_diename(d)) return name;  // inlined functions: the DWARF name
    if ((dwarf_attr(d, DW_AT_abstract_origin, &attr) || dwarf_attr(d, DW_AT_specification, &attr)) &&
        dwarf_formref_die(&attr, &origin)) {
      d = &origin;
      continue;
    }
    break;
  }
  return "??";
}

std::string call_file(Dwarf_Die* cu, Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Word idx = 0;
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (!dwarf_attr(die, DW_AT_call_file, &attr) || dwarf_formudata(&attr, &idx) != 0) return {};
  if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || idx >= nfiles) return {};
  const char* f = dwarf_filesrc(files, idx, nullptr, nullptr);
  return f ? f : "";
}

int call_line(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  Dwarf_Word line = 0;
  if (!dwarf_attr(die, DW_AT_call_line, &attr) || dwarf_formudata(&attr, &line) != 0) return 0;
  return int(line);
}

bool not_regular(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
}

// libdwfl's standard search for separate debug info opens candidate files with a blocking
// open(2): a FIFO planted where it looks (beside a module a trace names, in its .debug/) would
// hang us. Every candidate it may open is checked first; when one exists and is not a regular
// file, the module goes without separate debug info (its own symbol table still names functions).
int safe_find_debuginfo(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, const char* file_name,
                        const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
  // The module's user data is its DwflHandle's search path (set in open_module).
  const char* search = userdata && *userdata ? static_cast<const char*>(*userdata) : "";
  std::string dir = ".";
  if (file_name) {
    std::string f = file_name;
    size_t slash = f.rfind('/');
    dir = slash == std::string::npos ? "." : slash == 0 ? "/" : f.substr(0, slash);
  }
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  int n = dwfl_module_build_id(mod, &bits, &vaddr);
  std::string id = n > 0 ? to_hex(bits, n) : std::string();
  // The places libdwfl looks (libdwfl.h, debuginfo_path): by build-id under each absolute
  // element, and the debuglink name in the module's directory, in each relative element below
  // it, and in each absolute element (alone and with the module's directory appended).
  std::vector<std::string> candidates;
  std::string list = search;
  for (size_t start = 0; start <= list.size();) {
    size_t colon = list.find(':', start);
    std::string e = list.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    start = colon == std::string::npos ? list.size() + 1 : colon + 1;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) e.erase(0, 1);
    if (!e.empty() && e[0] == '/') {
      if (id.size() > 2) candidates.push_back(e + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug");
      if (debuglink_file) {
        candidates.push_back(e + "/" + debuglink_file);
        candidates.push_back(e + (dir == "/" ? "" : dir) + "/" + debuglink_file);
      }
    } else if (debuglink_file) {
      candidates.push_back((e.empty() ? dir : dir + "/" + e) + "/" + debuglink_file);
    }
  }
  for (const std::string& c : candidates)
    if (not_regular(c)) return -1;
  return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                      debuginfo_file_name);
}

bool is_eval_frame(const Frame& f) {
  return !f.python && (f.function == "_PyEval_EvalFrameDefault" || f.function == "PyEval_EvalFrameEx");
}

}  // namespace

Symbolizer::Symbolizer(const StackStore& store, SymbolizerOptions opt) : store_(store), opt_(std::move(opt)) {
  debuginfo_path_ = "+:.debug:/usr/lib/debug";
  for (const std::string& d : opt_.debug_dirs) debuginfo_path_ += ":" + d;
}

Symbolizer::~Symbolizer() = default;  // (ModuleDebug is complete here)

void Symbolizer::index_modules() {
  // A sweep over the range ends: each stretch of addresses goes to the latest record covering it
  // (highest t_ns, then the later record), as a linear scan "latest covering record" would pick.
  const std::vector<ModuleInfo>& mods = store_.modules;
  indexed_ = mods.size();
  if (modules_.size() < mods.size()) modules_.resize(mods.size());
  segments_.clear();
  struct Edge {
    uint64_t at;
    bool start;
    size_t module;
  };
  std::vector<Edge> edges;
  edges.reserve(2 * mods.size());
  for (size_t i = 0; i < mods.size(); ++i) {
    if (mods[i].lo >= mods[i].hi) continue;  // an empty or inverted range covers nothing
    edges.push_back({mods[i].lo, true, i});
    edges.push_back({mods[i].hi, false, i});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.at < b.at; });
  auto later = [&mods](size_t a, size_t b) {  // priority_queue: true when a ranks below b
    return mods[a].t_ns != mods[b].t_ns ? mods[a].t_ns < mods[b].t_ns : a < b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> open(later);
  std::vector<bool> closed(mods.size(), false);
  for (size_t k = 0; k < edges.size();) {
    uint64_t at = edges[k].at;
    for (; k < edges.size() && edges[k].at == at; ++k) {
      if (edges[k].start) open.push(edges[k].module);
      else closed[edges[k].module] = true;
    }
    while (!open.empty() && closed[open.top()]) open.pop();  // ended ranges leave lazily
    if (open.empty() || k == edges.size()) continue;
    size_t winner = open.top();
    uint64_t next = edges[k].at;
    if (!segments_.empty() && segments_.back().hi == at && segments_.back().module == winner)
      segments_.back().hi = next;  // the same module goes on
    else
      segments_.push_back({at, next, winner});
  }
}

long Symbolizer::module_index(uint64_t address) {
  if (indexed_ != store_.modules.size()) index_modules();  // first use, or the store grew
  auto it = std::upper_bound(segments_.begin(), segments_.end(), address,
                             [](uint64_t a, const Segment& s) { return a < s.lo; });
  if (it == segments_.begin()) return -1;
  --it;
  if (address >= it->hi) return -1;
  return long(it->module);
}

Symbolizer::ModuleDebug* Symbolizer::module_for(uint64_t address) {
  long index = module_index(address);
  return index < 0 ? nullptr : open_module(size_t(index));
}

// Modules are reported to libdwfl at bias 0 and looked up with pc - bias, the address relative to
// the trace's load bias, so that one handle serves every trace of a build whatever its ASLR bias
// (shared_modules.h). libdwfl places an ET_DYN module at the base it is given (its bias: base minus
// the first PT_LOAD's page) and shifts every lookup by that bias (symbol values + bias against the
// address, address - bias against DWARF ranges and lines), so base 0 and pc - bias find what
// base = bias and pc found; nothing wraps around, as a recorded range starts at or above its bias
// (lo = dlpi_addr + p_vaddr). An ET_EXEC's (non-PIE) base is ignored by libdwfl: the module sits
// at its link-time addresses and is looked up with pc itself, as before (its bias, dlpi_addr, is 0).
Symbolizer::ModuleDebug* Symbolizer::open_module(size_t best) {
  auto& slot = modules_[best];
  if (slot) return slot.get();
  slot = std::make_unique<ModuleDebug>();
  slot->index = best;
  const ModuleInfo& info = store_.modules[best];
  std::string file = opt_.sysroot + info.path;
  // The traced build, opened already for another trace of this process (a job's ranks): no file
  // opened, no DWARF read again. Only a module that opened and matched its recorded build-id is
  // there; any other (no build-id recorded, missing, not a regular file, another build) is opened
  // below for this Symbolizer, and said to it, every time.
  const bool shareable = !info.build_id.empty() && !info.path.empty() && info.path[0] == '/';
  if (shareable && (slot->shared = shared_module_find(info.build_id, file, info.path, debuginfo_path_)))
    return slot.get();
  auto h = std::make_unique<DwflHandle>();
  h->debuginfo_path = strdup(debuginfo_path_.c_str());
  h->callbacks.find_elf = dwfl_build_id_find_elf;
  h->callbacks.find_debuginfo = safe_find_debuginfo;
  h->callbacks.section_address = dwfl_offline_section_address;
  h->callbacks.debuginfo_path = &h->debuginfo_path;
  h->dwfl = dwfl_begin(&h->callbacks);
  std::string why;
  // Only a regular file, opened without blocking: a FIFO or a device named by a trace is not
  // symbolized (its frames keep module+offset).
  int fd = h->dwfl && !info.path.empty() && info.path[0] == '/' ? open_regular_file(file, &why) : -1;
  // Frames that keep module+offset are no surprise for a path that is not a file ([vdso], a
  // deleted mapping); a named file that is gone or unreadable is said, once.
  if (fd < 0 && !info.path.empty() && info.path[0] == '/' && opt_.warn)
    opt_.warn(file + ": " + why + "; its frames stay module+offset" +
              (opt_.sysroot.empty() ? " (--sysroot DIR: the traced machine's files)" : ""));
  bool matched = false;  // the build-id the trace recorded, found in the file
  if (fd >= 0) {
    h->mod = dwfl_report_elf(h->dwfl, info.path.c_str(), file.c_str(), fd, 0 /*bias*/, false);
    if (!h->mod) close(fd);  // consumed by libdwfl only on success
    dwfl_report_end(h->dwfl, nullptr, nullptr);
    if (h->mod) {
      void** user = nullptr;
      dwfl_module_info(h->mod, &user, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
      if (user) *user = h->debuginfo_path;  // for safe_find_debuginfo
      GElf_Addr base = 0;
      GElf_Ehdr ehdr;
      Elf* elf = dwfl_module_getelf(h->mod, &base);
      h->absolute = elf && gelf_getehdr(elf, &ehdr) && (ehdr.e_type == ET_EXEC || ehdr.e_type == ET_CORE);
    }
    if (h->mod && !info.build_id.empty()) {
      const unsigned char* bits = nullptr;
      GElf_Addr vaddr;
      int n = dwfl_module_build_id(h->mod, &bits, &vaddr);
      if (n > 0 && to_hex(bits, n) != info.build_id) {  // another build: do not lie
        h->mod = nullptr;
        if (opt_.warn)
          opt_.warn(file + ": another build than the traced one (build-id " + to_hex(bits, n) + ", the trace recorded " +
                    info.build_id + "); its frames stay module+offset");
      }
      matched = n > 0 && h->mod;
    }
  }
  // Offered to the process (kept private when the registry is full; when another worker added
  // the same build meanwhile, its handle is used and this one closed, its DWARF never read).
  if (matched && shareable) slot->shared = shared_module_add(info.build_id, file, info.path, debuginfo_path_, &h);
  if (!slot->shared) slot->own = std::move(h);
  return slot.get();
}

std::vector<Frame> Symbolizer::native(uint64_t address) {
  auto it = address_cache_.find(address);
  if (it != address_cache_.end()) return it->second;
  std::vector<Frame> out;
  // Return addresses point after the call: look up the call instruction itself (and its module:
  // a call that ends a library returns to the first byte past it).
  uint64_t pc = address > 0 ? address - 1 : 0;
  // Another trace of this process (a job's ranks, a directory of runs) may have named this place
  // of the same build already: no module opened, no DWARF read again (shared_symbols.h).
  const long index = module_index(pc);
  const ModuleInfo* known = index >= 0 ? &store_.modules[size_t(index)] : nullptr;
  if (known && !known->build_id.empty()) {
    if (shared_symbols_lookup(known->build_id, address - known->bias, &out)) {
      for (Frame& f : out) {
        f.module = known->path;
        f.offset = address - known->bias;
      }
      address_cache_[address] = out;
      return out;
    }
  }
  ModuleDebug* md = index < 0 ? nullptr : open_module(size_t(index));
  Frame base;
  base.function = "??";
  if (md) {
    const ModuleInfo& info = store_.modules[md->index];
    base.module = info.path;
    base.offset = address - info.bias;
  } else {
    base.module = "??";
    base.offset = address;
  }
  if (md && md->mod()) {
    // A shared handle serves other Symbolizers (job workers) too: its lock is held while libdw
    // runs on it and until what it returned is copied out.
    std::unique_lock<std::mutex> lock;
    if (md->shared) lock = std::unique_lock<std::mutex>(md->shared->mu);
    const DwflHandle& h = *md->handle();
    // The address in the module as libdwfl placed it (at bias 0: see open_module).
    const uint64_t at = h.absolute ? pc : pc - store_.modules[md->index].bias;
    if (const char* sym = dwfl_module_addrname(h.mod, at)) base.function = demangle(sym);
    std::string file;
    int line = 0;
    if (Dwfl_Line* l = dwfl_module_getsrc(h.mod, at)) {
      const char* f = dwfl_lineinfo(l, nullptr, &line, nullptr, nullptr, nullptr);
      if (f) file = f;
    }
    Dwarf_Addr bias = 0;
    Dwarf_Die* cu = dwfl_module_addrdie(h.mod, at, &bias);
    Dwarf_Die* scopes = nullptr;
    int n = cu ? dwarf_getscopes(cu, at - bias, &scopes) : 0;
    // For an inlined instance, dwarf_getscopes stops at the abstract scopes: the concrete chain
    // (inlined callers up to the real function) comes from dwarf_getscopes_die.
    if (n > 0 && dwarf_tag(&scopes[0]) == DW_TAG_inlined_subroutine) {
      Dwarf_Die* chain = nullptr;
      int m = dwarf_getscopes_die(&scopes[0], &chain);
      if (m > 0) {
        free(scopes);
        scopes = chain;
        n = m;
      }
    }
    for (int i = 0; i < n; ++i) {
      int tag = dwarf_tag(&scopes[i]);
      if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
      Frame f = base;
      // The concrete function keeps its symbol-table name (fully qualified); inlined ones come
      // from DWARF.
      f.function = tag == DW_TAG_subprogram && base.function != "??" ? base.function : die_function(&scopes[i]);
      if (f.function == "??") f.function = base.function;
      f.file = file;
      f.line = line;
      f.inlined = tag == DW_TAG_inlined_subroutine;
      out.push_back(f);
      if (tag == DW_TAG_subprogram) break;
      // The caller's location is where this call was inlined.
      file = call_file(cu, &scopes[i]);
      line = call_line(&scopes[i]);
    }
    free(scopes);
    if (!out.empty() && !out.back().inlined) {
    } else if (!out.empty()) {
      // No concrete subprogram scope (e.g. a partial CU): the symbol names the real function.
      Frame f = base;
      f.file = file;
      f.line = line;
      out.push_back(f);
    }
    if (out.empty()) {
      base.file = file;
      base.line = line;
    }
  }
  if (out.empty()) out.push_back(base);
  address_cache_[address] = out;
  if (md && md->mod() && known && !known->build_id.empty())
    shared_symbols_store(known->build_id, address - known->bias, out);
  return out;
}

std::vector<Frame> Symbolizer::python_frame(uint64_t raw) {
  uint32_t code_id = uint32_t((raw >> fmt::kFrameCodeShift) & fmt::kFrameCodeMask);
  uint32_t instr = uint32_t(raw & fmt::kFrameInstrMask);
  Frame f;
  f.python = true;
  f.module = "python";
  auto it = store_.code.find(code_id);
  if (it == store_.code.end()) {
    f.function = "<unknown Python code " + std::to_string(code_id) + ">";
    return {f};
  }
  const PyCodeInfo& c = it->second;
  f.function = c.qualname;
  f.file = c.file;
  int line = format::python_line(c.py_minor, reinterpret_cast<const uint8_t*>(c.linetable.data()), c.linetable.size(),
                         c.first_line, instr);
  f.line = line > 0 ? line : c.first_line;
  return {f};
}

const std::vector<Frame>& Symbolizer::stack(uint32_t id) {
  auto cached = cache_.find(id);
  if (cached != cache_.end()) return cached->second;
  std::vector<Frame>& out = cache_[id];
  StackFrames::Frames raw_frames;
  if (!store_.stacks.find(id, &raw_frames)) return out;

  // Python frames, grouped by the C-level eval call that ran them (a group ends at an entry frame).
  std::vector<std::vector<Frame>> groups;
  std::vector<Frame> native_frames;
  for (uint64_t raw : raw_frames) {
    if (raw & fmt::kFramePython) {
      if (groups.empty()) groups.emplace_back();
      for (Frame& f : python_frame(raw)) groups.back().push_back(f);
      if (raw & fmt::kFramePyEntry) groups.emplace_back();
    } else {
      for (Frame& f : native(raw)) native_frames.push_back(f);
    }
  }
  while (!groups.empty() && groups.back().empty()) groups.pop_back();

  // Splice: each eval-loop frame is replaced by the Python frames it was running.
  size_t g = 0;
  for (const Frame& f : native_frames) {
    if (is_eval_frame(f) && g < groups.size()) {
      out.insert(out.end(), groups[g].begin(), groups[g].end());
      ++g;
    } else {
      out.push_back(f);
    }
  }
  // Python frames left over. When some were spliced, the native stack was cut (its depth limit)
  // before the eval frames of the rest, which are outer: they go outermost. When none were (an
  // interpreter without symbols), they all go above the first frame of the Python runtime.
  if (g < groups.size()) {
    std::vector<Frame> rest;
    const bool spliced = g > 0;
    for (; g < groups.size(); ++g) rest.insert(rest.end(), groups[g].begin(), groups[g].end());
    size_t at = out.size();
    for (size_t i = 0; i < out.size() && !spliced; ++i)
      if (!out[i].python && out[i].module.find("python") != std::string::npos) {
        at = i;
        break;
      }
    out.insert(out.begin() + long(at), rest.begin(), rest.end());
  }
  return out;
}

}  // namespace vt::analyzer
