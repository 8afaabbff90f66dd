// Modules opened once per build for the whole process (read/shared_modules.h, issue 43): traces of
// the same library loaded at different biases share one libdwfl handle and name the same frames as
// an unshared Symbolizer; another build keeps its warning and module+offset without touching the
// shared handle; two threads symbolize through it at once; a non-PIE program (ET_EXEC) too. The
// library is this process's libc (its separate debug info when installed: lines, inlined frames)
// and this test binary, described as the recorder describes them (dl_iterate_phdr, build-id note).
#include <catch2/catch.hpp>

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "shared_modules.h"
#include "shared_symbols.h"
#include "symbolizer.h"

using vt::analyzer::Frame;
using vt::analyzer::ModuleInfo;
using vt::analyzer::shared_modules_opened;
using vt::analyzer::StackStore;
using vt::analyzer::Symbolizer;
using vt::analyzer::SymbolizerOptions;

namespace {

struct Loaded {
  uint64_t target = 0;  // an address in it
  ModuleInfo info;
  uint64_t text_lo = 0, text_hi = 0;  // its executable segment
  bool found = false;
};

std::string build_id_of(const dl_phdr_info* info) {
  std::string id;
  for (int i = 0; i < info->dlpi_phnum && id.empty(); ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
    const unsigned char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const unsigned char* name = p + sizeof *n;
      const unsigned char* desc = name + ((n->n_namesz + 3) & ~3u);
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
        char b[3];
        for (unsigned k = 0; k < n->n_descsz; ++k) {
          snprintf(b, sizeof b, "%02x", desc[k]);
          id += b;
        }
        break;
      }
      p = desc + ((n->n_descsz + 3) & ~3u);
    }
  }
  return id;
}

int find_object(dl_phdr_info* info, size_t, void* data) {
  auto* l = static_cast<Loaded*>(data);
  uint64_t lo = ~uint64_t(0), hi = 0, tlo = 0, thi = 0;
  bool covers = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    lo = std::min(lo, a);
    hi = std::max(hi, a + ph.p_memsz);
    if (l->target >= a && l->target < a + ph.p_memsz) covers = true;
    if (ph.p_flags & PF_X) tlo = a, thi = a + ph.p_memsz;
  }
  if (!covers) return 0;
  l->info.bias = info->dlpi_addr;
  l->info.lo = lo;
  l->info.hi = hi;
  l->info.t_ns = 1;
  l->info.path = info->dlpi_name ? info->dlpi_name : "";
  if (l->info.path.empty()) {  // the main program
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) l->info.path.assign(exe, size_t(n));
  }
  l->info.build_id = build_id_of(info);
  l->text_lo = tlo;
  l->text_hi = thi;
  l->found = true;
  return 1;
}

Loaded loaded_at(const void* address) {
  Loaded l;
  l.target = reinterpret_cast<uint64_t>(address);
  dl_iterate_phdr(find_object, &l);
  REQUIRE(l.found);
  REQUIRE(!l.info.build_id.empty());
  return l;
}

// A trace's module record of the same file loaded `shift` bytes higher, with this build-id.
StackStore store_at(const ModuleInfo& m, uint64_t shift, const std::string& build_id) {
  StackStore s;
  ModuleInfo r = m;
  r.bias += shift;
  r.lo += shift;
  r.hi += shift;
  r.build_id = build_id;
  s.modules.push_back(r);
  return s;
}

// Each test gets a debug-info search path of its own, so that its modules are its own entries
// in the process's registry (the counter moves by what the test did alone).
SymbolizerOptions isolated(std::vector<std::string>* warned = nullptr) {
  static std::atomic<int> n{0};
  SymbolizerOptions o;
  o.debug_dirs = {"/nonexistent/vt-shared-modules-" + std::to_string(getpid()) + "-" + std::to_string(n++)};
  if (warned) o.warn = [warned](const std::string& w) { warned->push_back(w); };
  return o;
}

std::string show(const std::vector<Frame>& fs) {
  std::string s;
  for (const Frame& f : fs)
    s += f.function + " " + f.file + ":" + std::to_string(f.line) + " " + f.module + "+" + std::to_string(f.offset) +
         (f.inlined ? " (inlined)" : "") + "\n";
  return s;
}

// Return addresses in the executable segment of `l`, every `step` bytes from `first`.
std::vector<uint64_t> sweep(const Loaded& l, uint64_t first, uint64_t step, size_t n) {
  std::vector<uint64_t> out;
  for (uint64_t a = l.text_lo + first; a < l.text_hi && out.size() < n; a += step) out.push_back(a);
  return out;
}

// The frames an unshared Symbolizer names (no build-id recorded: the module stays private) at
// the library's real bias, for these return addresses at the real bias.
std::vector<std::vector<Frame>> unshared_frames(const Loaded& l, const std::vector<uint64_t>& at,
                                                const SymbolizerOptions& opt) {
  StackStore s = store_at(l.info, 0, "");
  Symbolizer sym(s, opt);
  std::vector<std::vector<Frame>> out;
  for (uint64_t a : at) out.push_back(sym.native(a));
  return out;
}

bool named_in_cache(const std::string& build_id, uint64_t offset) {
  std::vector<Frame> ignored;
  return vt::analyzer::shared_symbols_lookup(build_id, offset, &ignored);
}

constexpr uint64_t kShiftA = uint64_t(0x1234) << 32;  // two other load addresses of the same build
constexpr uint64_t kShiftB = uint64_t(0x2468) << 32;

}  // namespace

extern "C" __attribute__((noinline, used)) int vt_shared_first(int x) { return x * 3 + 1; }
extern "C" __attribute__((noinline, used)) int vt_shared_second(int x) { return x * 5 + 2; }

TEST_CASE("one library at two biases: one shared handle, the frames of an unshared symbolizer for both") {
  for (bool libc : {true, false}) {
    Loaded l = libc ? loaded_at(reinterpret_cast<void*>(&qsort)) : loaded_at(reinterpret_cast<void*>(&vt_shared_first));
    INFO(l.info.path << " build-id " << l.info.build_id);
    SymbolizerOptions opt = isolated();
    // Addresses the first trace names, and others only the second needs (the name cache cannot
    // answer them: the second trace's frames come from the shared handle, at its own bias).
    std::vector<uint64_t> first, second;
    if (libc) {
      first = sweep(l, 0x31, 0x2000, 120);
      second = sweep(l, 0x1031, 0x2000, 120);
    } else {
      first = {reinterpret_cast<uint64_t>(&vt_shared_first) + 2};
      second = {reinterpret_cast<uint64_t>(&vt_shared_second) + 2};
    }
    REQUIRE(!first.empty());
    REQUIRE(!second.empty());
    auto want_first = unshared_frames(l, first, opt), want_second = unshared_frames(l, second, opt);

    const size_t before = shared_modules_opened();
    StackStore a = store_at(l.info, kShiftA, l.info.build_id), b = store_at(l.info, kShiftB, l.info.build_id);
    Symbolizer sa(a, opt);
    size_t named = 0;
    for (size_t k = 0; k < first.size(); ++k) {
      std::vector<Frame> got = sa.native(first[k] + kShiftA);
      CHECK(show(got) == show(want_first[k]));
      named += got.back().function != "??";
    }
    CHECK(shared_modules_opened() == before + 1);
    Symbolizer sb(b, opt);
    for (size_t k = 0; k < second.size(); ++k) {
      REQUIRE_FALSE(named_in_cache(l.info.build_id, second[k] - l.info.bias));
      std::vector<Frame> got = sb.native(second[k] + kShiftB);
      CHECK(show(got) == show(want_second[k]));
      named += got.back().function != "??";
    }
    CHECK(shared_modules_opened() == before + 1);  // the second trace opened nothing
    CHECK(named > (first.size() + second.size()) * 9 / 10);
    if (!libc) {
      CHECK(sa.native(first[0] + kShiftA).back().function == "vt_shared_first");
      CHECK(sb.native(second[0] + kShiftB).back().function == "vt_shared_second");
    }
  }
}

TEST_CASE("another build of a shared library keeps its warning and module+offset, and the shared handle stays") {
  Loaded l = loaded_at(reinterpret_cast<void*>(&qsort));
  std::vector<std::string> warned;
  SymbolizerOptions opt = isolated(&warned);
  const std::string other(l.info.build_id.size(), '0');
  std::vector<uint64_t> at = sweep(l, 0x77, 0x4000, 40);
  auto want = unshared_frames(l, at, opt);
  REQUIRE(warned.empty());
  const size_t before = shared_modules_opened();

  auto check_other_build = [&](uint64_t shift, const std::vector<uint64_t>& where) {
    warned.clear();
    StackStore s = store_at(l.info, shift, other);
    Symbolizer sym(s, opt);
    for (uint64_t a : where) {
      std::vector<Frame> f = sym.native(a + shift);
      REQUIRE(f.size() == 1);
      CHECK(f[0].function == "??");
      CHECK(f[0].module == l.info.path);
      CHECK(f[0].offset == a - l.info.bias);
    }
    REQUIRE(warned.size() == 1);  // once per Symbolizer, whatever the number of addresses
    CHECK(warned[0].find("another build") != std::string::npos);
    CHECK(warned[0].find(other) != std::string::npos);
  };
  auto check_right = [&](uint64_t shift, size_t from, size_t to) {
    warned.clear();
    StackStore s = store_at(l.info, shift, l.info.build_id);
    Symbolizer sym(s, opt);
    for (size_t k = from; k < to; ++k) CHECK(show(sym.native(at[k] + shift)) == show(want[k]));
    CHECK(warned.empty());
  };

  // Before the shared handle exists: the mismatch is not added (it would poison the entry).
  check_other_build(kShiftA, {at.begin(), at.begin() + 10});
  CHECK(shared_modules_opened() == before);
  check_right(kShiftB, 10, 20);
  CHECK(shared_modules_opened() == before + 1);
  // After: the other build does not get the shared handle, and still gets its warning.
  check_other_build(kShiftA + 0x100000000, {at.begin() + 20, at.begin() + 30});
  check_right(kShiftB + 0x100000000, 30, at.size());
  CHECK(shared_modules_opened() == before + 1);

  // The right build-id under a sysroot that lacks the file: its warning, as before.
  warned.clear();
  SymbolizerOptions missing = opt;
  missing.sysroot = "/nonexistent-sysroot";
  StackStore s = store_at(l.info, kShiftA, l.info.build_id);
  Symbolizer sym(s, missing);
  CHECK(sym.native(at[0] + kShiftA)[0].function == "??");
  REQUIRE(warned.size() == 1);
  CHECK(warned[0].find("/nonexistent-sysroot" + l.info.path) == 0);
  CHECK(shared_modules_opened() == before + 1);
}

TEST_CASE("two threads symbolize one build at two biases through the shared handle at once") {
  Loaded l = loaded_at(reinterpret_cast<void*>(&qsort));
  SymbolizerOptions opt = isolated();
  std::vector<uint64_t> at[2] = {sweep(l, 0x1d5, 0x1800, 150), sweep(l, 0x9d5, 0x1800, 150)};
  std::vector<std::vector<Frame>> want[2] = {unshared_frames(l, at[0], opt), unshared_frames(l, at[1], opt)};
  const size_t before = shared_modules_opened();
  StackStore stores[2] = {store_at(l.info, kShiftA, l.info.build_id), store_at(l.info, kShiftB, l.info.build_id)};
  const uint64_t shift[2] = {kShiftA, kShiftB};
  std::vector<std::vector<Frame>> got[2];
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      Symbolizer sym(stores[t], opt);
      ready.fetch_add(1);
      while (ready.load() < 2) {
      }
      for (uint64_t a : at[t]) got[t].push_back(sym.native(a + shift[t]));
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 2; ++t) {
    REQUIRE(got[t].size() == want[t].size());
    for (size_t k = 0; k < got[t].size(); ++k) CHECK(show(got[t][k]) == show(want[t][k]));
  }
  CHECK(shared_modules_opened() == before + 1);
}

TEST_CASE("a non-PIE program (ET_EXEC) shared by build-id is named at its absolute addresses") {
  FILE* p = popen(VT_NOPIE_PROBE, "r");
  REQUIRE(p);
  unsigned long long bias = 1, lo = 0, hi = 0, first = 0, second = 0;
  char id[130] = "";
  int fields = fscanf(p, "%llx %llx %llx %129s %llx %llx", &bias, &lo, &hi, id, &first, &second);
  CHECK(pclose(p) == 0);
  REQUIRE(fields == 6);
  REQUIRE(bias == 0);  // not relocated: dl_iterate_phdr's dlpi_addr is 0
  REQUIRE(std::string(id) != "-");
  ModuleInfo m;
  m.lo = lo;
  m.hi = hi;
  m.t_ns = 1;
  m.path = VT_NOPIE_PROBE;
  SymbolizerOptions opt = isolated();
  StackStore unshared = store_at(m, 0, "");
  Symbolizer ref(unshared, opt);
  const size_t before = shared_modules_opened();
  StackStore a = store_at(m, 0, id), b = store_at(m, 0, id);
  Symbolizer sa(a, opt), sb(b, opt);
  std::vector<Frame> f1 = sa.native(first + 2), f2 = sb.native(second + 2);
  CHECK(show(f1) == show(ref.native(first + 2)));
  CHECK(show(f2) == show(ref.native(second + 2)));
  CHECK(f1.back().function == "nopie_first");
  CHECK(f2.back().function == "nopie_second");
  CHECK(f1.back().file.find("nopie.c") != std::string::npos);
  CHECK(f1.back().line > 0);
  CHECK(f1.back().offset == first + 2);  // (the return address)
  CHECK(shared_modules_opened() == before + 1);
  // A record claiming another bias for it (only a crafted trace could): libdwfl keeps an ET_EXEC
  // at its link-time addresses, so it is still looked up at the absolute address, as before
  // modules were shared; the offset is the record's.
  StackStore c = store_at(m, 0x10000, id);
  c.modules[0].lo = lo;
  c.modules[0].hi = hi;
  Symbolizer sc(c, opt);
  std::vector<Frame> f3 = sc.native(first + 2);
  CHECK(f3.back().function == "nopie_first");
  CHECK(f3.back().offset == first + 2 - 0x10000);
  CHECK(shared_modules_opened() == before + 1);
}
