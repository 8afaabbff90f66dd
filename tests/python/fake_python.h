// A fake CPython in memory, for tests/python/synthetic_test.cpp and status_e2e.cpp: the symbols
// the frame walker looks up with dlsym(RTLD_DEFAULT) (include this in exactly one file of an
// executable built with ENABLE_EXPORTS), a public frame API and Py_AddPendingCall that answer from
// g_api / store the callback, and builders for one layout row's objects (type objects, compact
// str, bytes, code objects carrying a real line table of that minor from fixtures/linetables.txt,
// interpreter frames or 3.10 frame objects, thread states; the 3.15 base frame and memory that
// must not be read in PROT_NONE pages). Offsets come from python_layouts.h, the table under test;
// the debug-offsets blocks from fixtures/ (each build's own, from its headers).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "python_layouts.h"

namespace fakepy {
namespace d = vt::py::detail;
}

// ---------------------------------------------------------------------------------------------
// The fake interpreter's exported symbols.
inline thread_local void* t_tstate = nullptr;
inline void* g_interp = nullptr;
inline int (*g_pending)(void*) = nullptr;
inline void* g_pending_arg = nullptr;
inline const char* g_version = "";

// The public frame API answers from this list (innermost first), like CPython would.
struct ApiFrame {
  uintptr_t handle;  // the fake frame (3.10: the PyFrameObject the self-check reads f_trace from)
  uintptr_t code;
  int lasti;  // bytes, -1 not started
  int line;
};
inline std::vector<ApiFrame> g_api;
inline std::map<uintptr_t, std::function<int(int)>> g_addr2line;  // code -> line of a byte offset

extern "C" {
alignas(64) unsigned char PyType_Type[512], PyCode_Type[512], PyFrame_Type[512], PyUnicode_Type[512],
    PyBytes_Type[512];
alignas(64) unsigned char _PyRuntime[1024];
const char* Py_GetVersion() { return g_version; }
void* PyGILState_GetThisThreadState() { return t_tstate; }
void* PyInterpreterState_Main() { return g_interp; }
int Py_AddPendingCall(int (*fn)(void*), void* arg) {
  g_pending = fn, g_pending_arg = arg;
  return 0;
}
void* PyThreadState_GetUnchecked() { return t_tstate; }
int PyGILState_Check() { return 1; }
void* PyEval_GetFrame() { return g_api.empty() ? nullptr : reinterpret_cast<void*>(g_api[0].handle); }
static const ApiFrame* api_frame(void* f) {
  for (const ApiFrame& a : g_api)
    if (a.handle == reinterpret_cast<uintptr_t>(f)) return &a;
  std::printf("the self-check asked about an unknown frame %p\n", f);
  std::exit(3);
}
void* PyFrame_GetBack(void* f) {
  const ApiFrame* a = api_frame(f);
  size_t i = size_t(a - g_api.data()) + 1;
  return i < g_api.size() ? reinterpret_cast<void*>(g_api[i].handle) : nullptr;
}
void* PyFrame_GetCode(void* f) { return reinterpret_cast<void*>(api_frame(f)->code); }
int PyFrame_GetLasti(void* f) { return api_frame(f)->lasti; }
int PyFrame_GetLineNumber(void* f) { return api_frame(f)->line; }
int PyCode_Addr2Line(void* code, int addr) {
  auto it = g_addr2line.find(reinterpret_cast<uintptr_t>(code));
  return it == g_addr2line.end() ? -2 : it->second(addr);
}
void Py_DecRef(void*) {}
#ifdef VT_FAKE_DEBUG_BUILD
void _Py_NegativeRefcount() {}
#endif
#ifdef VT_FAKE_TRACE_REFS
void _Py_PrintReferences() {}
#endif
#ifdef VT_FAKE_FORGET_REFERENCE
void _Py_ForgetReference() {}
#endif
}

namespace fakepy {

inline std::string g_fixtures;

// ---------------------------------------------------------------------------------------------
// Fixtures.
struct LineTable {
  int minor = 0, firstlineno = 0, code_bytes = 0, firsttraceable = 0;
  std::vector<uint8_t> table;
  std::map<int, int> lines;  // byte offset -> line (-1: none), per co_lines()
};
inline std::map<int, LineTable> g_tables;

inline bool load_fixtures() {
  std::ifstream in(g_fixtures + "/linetables.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    LineTable t;
    std::string hex, pairs;
    s >> t.minor >> t.firstlineno >> t.code_bytes >> t.firsttraceable >> hex >> pairs;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) t.table.push_back(uint8_t(std::stoi(hex.substr(i, 2), nullptr, 16)));
    std::istringstream p(pairs);
    std::string kv;
    while (std::getline(p, kv, ',')) t.lines[std::stoi(kv)] = std::stoi(kv.substr(kv.find(':') + 1));
    if (t.minor) g_tables[t.minor] = t;
  }
  return g_tables.size() >= 6;
}

inline std::vector<uint8_t> debug_block(const d::Layout& L) {
  std::string path = g_fixtures + "/debug_offsets_3." + std::to_string(L.minor) + (L.free_threaded ? "t" : "") + ".bin";
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The line table a row's code objects carry: its own minor's (3.14t uses 3.14's), the newest
// one for a newer minor.
inline const LineTable& table_for(int minor) { return g_tables.count(minor) ? g_tables[minor] : g_tables.rbegin()->second; }

// ---------------------------------------------------------------------------------------------
// Memory: a bump arena, and pages the walker must not touch.
inline uint8_t* arena(size_t n) {
  static uint8_t* base = nullptr;
  static size_t used = 0, cap = 0;
  n = (n + 63) & ~size_t(63);
  if (used + n > cap) {
    cap = std::max<size_t>(1 << 20, n);
    base = static_cast<uint8_t*>(mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    used = 0;
  }
  uint8_t* p = base + used;
  used += n;
  std::memset(p, 0, n);
  return p;
}
// n bytes that end exactly where a PROT_NONE page begins (reading one byte past them faults).
inline uint8_t* before_guard(size_t n) {
  long pg = sysconf(_SC_PAGESIZE);
  auto* m = static_cast<uint8_t*>(mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  mprotect(m + pg, pg, PROT_NONE);
  return m + pg - n;
}
// A whole PROT_NONE page: an address that must never be dereferenced.
inline uintptr_t forbidden() {
  long pg = sysconf(_SC_PAGESIZE);
  void* m = mmap(nullptr, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return reinterpret_cast<uintptr_t>(m);
}

template <class T>
inline void put(uintptr_t p, T v) {
  std::memcpy(reinterpret_cast<void*>(p), &v, sizeof v);
}
inline uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }
inline uintptr_t ld_ptr(uintptr_t p) {
  uintptr_t v;
  std::memcpy(&v, reinterpret_cast<void*>(p), 8);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Fake CPython objects for one layout row.
struct Fake {
  const d::Layout& L;
  int minor;  // the interpreter's minor (L.minor, or newer)
  explicit Fake(const d::Layout& l, int m) : L(l), minor(m) {}

  uintptr_t object(size_t size, const void* type) {
    uintptr_t o = addr(arena(size));
    put<uintptr_t>(o + L.ob_type, addr(type));
    return o;
  }
  void type(unsigned char* t, const char* name, int64_t basicsize, int64_t itemsize) {
    std::memset(t, 0, 512);
    put<uintptr_t>(addr(t) + L.ob_type, addr(PyType_Type));
    put<uintptr_t>(addr(t) + L.tp_name, addr(name));
    put<int64_t>(addr(t) + L.tp_basicsize, basicsize);
    put<int64_t>(addr(t) + L.tp_itemsize, itemsize);
  }
  void types() {
    type(PyType_Type, "type", 920, 40);
    type(PyCode_Type, "code", L.code_basicsize, L.code_itemsize);
    type(PyFrame_Type, "frame", L.frame_basicsize, 8);
    type(PyUnicode_Type, "str", L.unicode_basicsize, 0);
    type(PyBytes_Type, "bytes", L.bytes_sval + 1, 1);
  }
  // A compact str of code points `cps` (kind chosen like CPython: the narrowest that fits).
  uintptr_t str(const std::u32string& cps) {
    uint32_t maxc = 0;
    for (char32_t c : cps) maxc = std::max<uint32_t>(maxc, c);
    bool ascii = maxc < 0x80;
    int kind = maxc < 0x100 ? 1 : maxc < 0x10000 ? 2 : 4;
    size_t header = ascii ? L.ascii_size : L.compact_size;
    uintptr_t s = object(header + (cps.size() + 1) * kind, PyUnicode_Type);
    put<int64_t>(s + L.uni_length, int64_t(cps.size()));
    uint32_t state = (uint32_t(kind) << L.state_kind_shift) | (1u << L.state_compact_shift) |
                     (uint32_t(ascii) << L.state_ascii_shift);
    put<uint32_t>(s + L.uni_state, state);
    for (size_t i = 0; i < cps.size(); ++i) {
      if (kind == 1) put<uint8_t>(s + header + i, uint8_t(cps[i]));
      if (kind == 2) put<uint16_t>(s + header + 2 * i, uint16_t(cps[i]));
      if (kind == 4) put<uint32_t>(s + header + 4 * i, uint32_t(cps[i]));
    }
    return s;
  }
  uintptr_t bytes(const std::vector<uint8_t>& v) {
    uintptr_t b = object(L.bytes_sval + v.size() + 1, PyBytes_Type);
    put<int64_t>(b + L.bytes_size, int64_t(v.size()));
    std::memcpy(reinterpret_cast<void*>(b + L.bytes_sval), v.data(), v.size());
    return b;
  }

  struct Code {
    uintptr_t obj;
    std::string file, qual;  // UTF-8, as describe_code() must give them
    const LineTable* lt;
    std::vector<uintptr_t> copies;  // free-threaded 3.14+: thread-local bytecode copies, [0] = own
  };
  Code code(const std::u32string& file, const std::string& file8, const std::u32string& qual,
            const std::string& qual8, int ncopies = 1) {
    const LineTable& lt = table_for(minor);
    Code c{object(L.code_basicsize + lt.code_bytes + 2, PyCode_Type), file8, qual8, &lt, {}};
    if (L.kind != d::FrameKind::kFrameObject) put<int64_t>(c.obj + L.ob_size, lt.code_bytes / 2);
    put<uintptr_t>(c.obj + L.co_filename, str(file));
    put<uintptr_t>(c.obj + L.co_name, str(qual));
    put<int32_t>(c.obj + L.co_firstlineno, lt.firstlineno);
    put<uintptr_t>(c.obj + L.co_linetable, bytes(lt.table));
    if (L.co_firsttraceable) put<int32_t>(c.obj + L.co_firsttraceable, 1);  // unit 0 is the prologue
    c.copies.push_back(c.obj + L.co_code_adaptive);
    if (L.co_tlbc) {
      uintptr_t arr = addr(arena(8 + 8 * ncopies));
      put<int64_t>(arr, ncopies);
      put<uintptr_t>(arr + 8, c.obj + L.co_code_adaptive);
      for (int i = 1; i < ncopies; ++i) {
        c.copies.push_back(addr(arena(lt.code_bytes + 16)));
        put<uintptr_t>(arr + 8 + 8 * i, c.copies.back());
      }
      put<uintptr_t>(c.obj + L.co_tlbc, arr);
    }
    auto lines = lt.lines;
    int first = lt.firstlineno;
    g_addr2line[c.obj] = [lines, first](int a) {
      if (a < 0) return first;
      auto it = lines.find(a);
      return it == lines.end() ? -1 : it->second;
    };
    return c;
  }

  // An interpreter frame (3.11+) or frame object (3.10) running `c` at byte offset `off` (-1:
  // not started) of bytecode copy `copy`; `exec_tag` is or-ed into a 3.14+ f_executable.
  uintptr_t frame(const Code& c, int off, int owner = 0, uintptr_t exec_tag = 0, int copy = 0) {
    uintptr_t f;
    if (L.kind == d::FrameKind::kFrameObject) {
      f = object(L.frame_basicsize, PyFrame_Type);
      put<uintptr_t>(f + L.fr_code, c.obj);
      put<int32_t>(f + L.fr_instr, off < 0 ? -1 : off / 2);
      return f;
    }
    f = addr(arena(160));
    put<uintptr_t>(f + L.fr_code, c.obj | exec_tag);
    put<uint8_t>(f + L.fr_owner, uint8_t(owner));
    // 3.11/3.12 point at the unit before the next instruction (prev_instr), 3.13+ at the current one.
    uintptr_t bc = c.copies[size_t(copy)];
    put<uintptr_t>(f + L.fr_instr, off < 0 ? bc - 2 : bc + uintptr_t(off));
    if (L.fr_tlbc_index) put<int32_t>(f + L.fr_tlbc_index, copy);
    return f;
  }
  // A frame without Python code (owner = a shim owner); f_executable is None-like garbage that
  // must not be followed: a forbidden address.
  uintptr_t shim(int owner) {
    uintptr_t f = addr(arena(160));
    put<uintptr_t>(f + L.fr_code, forbidden());
    put<uintptr_t>(f + L.fr_instr, forbidden());
    put<uint8_t>(f + L.fr_owner, uint8_t(owner));
    return f;
  }
  void link(uintptr_t f, uintptr_t prev) { put<uintptr_t>(f + L.fr_previous, prev); }
  void set_is_entry(uintptr_t f) {  // 3.11
    if (L.minor == 11) put<uint8_t>(f + L.fr_owner - 1, 1);
  }

  // A thread state whose chain starts at `top`; 3.15+ get a base frame in a PROT_NONE page.
  uintptr_t tstate(uintptr_t top, uintptr_t interp, uintptr_t* base_out = nullptr) {
    uintptr_t ts = addr(arena(256));
    put<uintptr_t>(ts + L.ts_interp, interp);
    if (L.kind == d::FrameKind::kCFrameInterp) {
      uintptr_t cf = addr(arena(64));
      put<uintptr_t>(cf + L.cframe_current, top);
      put<uintptr_t>(ts + L.ts_frame, cf);
    } else {
      put<uintptr_t>(ts + L.ts_frame, top);
    }
    if (L.ts_base_frame) {
      uintptr_t base = forbidden();
      put<uintptr_t>(ts + L.ts_base_frame, base);
      if (base_out) *base_out = base;
    }
    return ts;
  }
};

inline void setup_runtime(const d::Layout& L, const std::vector<uint8_t>& block) {
  std::memset(_PyRuntime, 0, sizeof _PyRuntime);
  std::memcpy(_PyRuntime, block.data(), std::min(block.size(), sizeof _PyRuntime));
  (void)L;
}

inline std::string version_string(const d::Layout& L, int minor) {
  std::string v = "3." + std::to_string(minor) + ".2 ";
  if (L.free_threaded) v += minor == 13 ? "experimental free-threading build " : "free-threading build ";
  return v + "(main, Jan 1 2026, 00:00:00) [GCC]";
}

// The version field of a block, for another minor.
inline void set_block_version(std::vector<uint8_t>& b, int minor) {
  uint64_t v = (3ull << 24) | (uint64_t(minor) << 16) | 0x02F0;
  std::memcpy(b.data() + d::kDebugVersion, &v, 8);
}

}  // namespace fakepy
