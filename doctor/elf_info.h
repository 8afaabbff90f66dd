// Reading an executable's ELF headers without running it or ldd: whether it has a program
// interpreter (PT_INTERP; without one, static and static-pie binaries, the dynamic loader never
// runs and LD_PRELOAD does nothing) and which libraries it needs (DT_NEEDED).
#pragma once

#include <string>
#include <vector>

namespace vt::doctor {

struct ElfInfo {
  bool is_elf = false;
  std::string error;        // why it could not be read, or "not an ELF file"
  bool has_interp = false;  // PT_INTERP present: the dynamic loader runs, LD_PRELOAD works
  std::string interp;
  bool has_dynamic = false;  // PT_DYNAMIC present (true for static-pie too)
  std::vector<std::string> needed;
};

// Reads 64-bit little-endian ELF files (x86-64, aarch64); others give is_elf with no details.
ElfInfo read_elf(const std::string& path);

}  // namespace vt::doctor
