// shareable.cpp — see shareable.h.
#include "shareable.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <new>

namespace fc {
namespace {

constexpr char kMagic[8] = {'F', 'C', 'S', 'H', 'A', 'R', 'E', '1'};

}  // namespace

SharedObject *shared_create(uint32_t kind, int *fd) {
  int f = memfd_create("fakecuda-shareable", MFD_CLOEXEC);
  if (f < 0) return nullptr;
  const size_t len = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void *m = MAP_FAILED;
  if (ftruncate(f, static_cast<off_t>(len)) == 0) m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  if (m == MAP_FAILED) {
    close(f);
    return nullptr;
  }
  SharedObject *o = new (m) SharedObject();
  memcpy(o->magic, kMagic, sizeof kMagic);
  o->kind = kind;
  o->pid = getpid();
  o->importers.store(0);
  o->devices_added.store(0);
  *fd = f;
  return o;
}

SharedObject *shared_open(int fd, uint32_t kind) {
  struct stat st;
  const size_t len = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) != len)
    return nullptr;
  void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return nullptr;
  SharedObject *o = static_cast<SharedObject *>(m);
  if (memcmp(o->magic, kMagic, sizeof kMagic) != 0 || o->kind != kind) {
    munmap(m, len);
    return nullptr;
  }
  return o;
}

void shared_unmap(SharedObject *o) {
  if (o) munmap(o, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
}

int shared_export(int fd, std::vector<Export> *exports) {
  int out = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  struct stat st;
  if (out < 0 || fstat(out, &st) != 0) {
    if (out >= 0) close(out);
    return -1;
  }
  exports->push_back(Export{out, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  return out;
}

bool shared_exports_open(std::vector<Export> &exports) {
  for (auto it = exports.begin(); it != exports.end();) {
    struct stat st;
    const bool open = fstat(it->fd, &st) == 0 && static_cast<uint64_t>(st.st_dev) == it->dev &&
                      static_cast<uint64_t>(st.st_ino) == it->ino;
    it = open ? std::next(it) : exports.erase(it);  // closed (or the number reused): gone for good
  }
  return !exports.empty();
}

}  // namespace fc
