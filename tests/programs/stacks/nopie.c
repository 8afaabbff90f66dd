/* A program linked -no-pie (ET_EXEC: loaded at its link-time addresses, bias 0) for the unit test
 * of modules shared by build-id (tests/unit/shared_modules_test.cpp). It prints its own module
 * record as the recorder would write it (dl_iterate_phdr: bias, PT_LOAD range, GNU build-id),
 * then the addresses of two functions. Built with -g. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) int nopie_first(int x) { return x * 7 + 1; }
__attribute__((noinline)) int nopie_second(int x) { return x * 5 - 2; }

static int print_program(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  uint64_t lo = UINT64_MAX, hi = 0;
  char id[129] = "";
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD) {
      uint64_t a = info->dlpi_addr + ph->p_vaddr;
      if (a < lo) lo = a;
      if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    } else if (ph->p_type == PT_NOTE && !id[0]) {
      const unsigned char* p = (const unsigned char*)(info->dlpi_addr + ph->p_vaddr);
      const unsigned char* end = p + ph->p_memsz;
      while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr)* n = (const ElfW(Nhdr)*)p;
        const unsigned char* name = p + sizeof *n;
        const unsigned char* desc = name + ((n->n_namesz + 3) & ~3u);
        if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) && n->n_descsz <= 64)
          for (unsigned k = 0; k < n->n_descsz; ++k) sprintf(id + 2 * k, "%02x", desc[k]);
        p = desc + ((n->n_descsz + 3) & ~3u);
      }
    }
  }
  printf("%llx %llx %llx %s\n", (unsigned long long)info->dlpi_addr, (unsigned long long)lo, (unsigned long long)hi,
         id[0] ? id : "-");
  return 1; /* the first object is the program */
}

int main(void) {
  dl_iterate_phdr(print_program, NULL);
  printf("%llx %llx\n", (unsigned long long)(uintptr_t)&nopie_first, (unsigned long long)(uintptr_t)&nopie_second);
  return nopie_first(1) + nopie_second(2) == 0;
}
