// See elf_info.h. Only the headers are read: program headers for PT_INTERP and PT_DYNAMIC, the
// dynamic section for DT_NEEDED and DT_STRTAB, whose address is mapped back to a file offset
// through the PT_LOAD segments.
#include "elf_info.h"

#include <elf.h>

#include <unistd.h>

#include <cstring>

#include "regular_file.h"

namespace vt::doctor {

namespace {

bool read_at(int fd, uint64_t off, void* dst, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, static_cast<char*>(dst) + done, n - done, off_t(off + done));
    if (r <= 0) return false;
    done += size_t(r);
  }
  return true;
}

// Closes the descriptor on every return path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

ElfInfo read_elf(const std::string& path) {
  ElfInfo info;
  std::string why;
  Fd f{vt::analyzer::open_regular_file(path, &why)};  // never blocks on a FIFO planted on a library path
  if (f.fd < 0) {
    info.error = path + ": " + why;
    return info;
  }
  Elf64_Ehdr eh;
  if (!read_at(f.fd, 0, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    info.error = "not an ELF file";
    return info;
  }
  info.is_elf = true;
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 512) {
    info.error = "not a 64-bit little-endian ELF file";
    return info;
  }
  std::vector<Elf64_Phdr> ph(eh.e_phnum);
  if (!read_at(f.fd, eh.e_phoff, ph.data(), ph.size() * sizeof(Elf64_Phdr))) {
    info.error = "truncated program headers";
    return info;
  }
  const Elf64_Phdr* dyn = nullptr;
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type == PT_INTERP && p.p_filesz > 0 && p.p_filesz < 4096) {
      std::string s(p.p_filesz, '\0');
      if (read_at(f.fd, p.p_offset, &s[0], s.size())) {
        info.has_interp = true;
        info.interp = s.c_str();  // stops at the terminating NUL
      }
    } else if (p.p_type == PT_DYNAMIC) {
      dyn = &p;
    }
  }
  if (!dyn) return info;
  info.has_dynamic = true;
  size_t count = std::min<uint64_t>(dyn->p_filesz / sizeof(Elf64_Dyn), 4096);
  std::vector<Elf64_Dyn> d(count);
  if (!read_at(f.fd, dyn->p_offset, d.data(), count * sizeof(Elf64_Dyn))) return info;
  uint64_t strtab_addr = 0, strsz = 0;
  std::vector<uint64_t> needed_offsets;
  for (const Elf64_Dyn& e : d) {
    if (e.d_tag == DT_NULL) break;
    if (e.d_tag == DT_STRTAB) strtab_addr = e.d_un.d_ptr;
    if (e.d_tag == DT_STRSZ) strsz = e.d_un.d_val;
    if (e.d_tag == DT_NEEDED) needed_offsets.push_back(e.d_un.d_val);
  }
  // DT_STRTAB is a virtual address: find the PT_LOAD that maps it.
  uint64_t strtab_off = 0;
  bool mapped = false;
  for (const Elf64_Phdr& p : ph) {
    if (p.p_type == PT_LOAD && strtab_addr >= p.p_vaddr && strtab_addr < p.p_vaddr + p.p_filesz) {
      strtab_off = p.p_offset + (strtab_addr - p.p_vaddr);
      mapped = true;
      break;
    }
  }
  if (!mapped || strsz == 0 || strsz > (16u << 20)) return info;
  std::string strtab(strsz, '\0');
  if (!read_at(f.fd, strtab_off, &strtab[0], strsz)) return info;
  for (uint64_t off : needed_offsets)
    if (off < strsz) info.needed.push_back(strtab.c_str() + off);
  return info;
}

}  // namespace vt::doctor
