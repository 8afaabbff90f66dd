// See file_header.h.
#include "file_header.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace vt::format {

HeaderStatus check_header(const FileHeader& h, uint64_t file_size) {
  if (file_size == 0) return HeaderStatus::kEmpty;
  if (file_size < sizeof kFileMagic || memcmp(h.magic, kFileMagic, sizeof kFileMagic) != 0)
    return HeaderStatus::kNotATrace;
  if (file_size < sizeof(FileHeader)) return HeaderStatus::kCutInHeader;
  if (h.version_major != kVersionMajor) return HeaderStatus::kOtherMajor;
  if (h.chunk_size < 256 || h.chunk_size > kMaxGeometry || h.header_size < sizeof h || h.header_size > kMaxGeometry)
    return HeaderStatus::kCorrupt;
  return HeaderStatus::kValid;
}

HeaderStatus read_header(int fd, FileHeader* h, uint64_t* file_size) {
  struct stat st;
  *file_size = 0;
  memset(static_cast<void*>(h), 0, sizeof *h);
  if (fstat(fd, &st) != 0) return HeaderStatus::kUnreadable;
  *file_size = uint64_t(st.st_size);
  size_t want = *file_size < sizeof *h ? size_t(*file_size) : sizeof *h;
  if (want && pread(fd, h, want, 0) != ssize_t(want)) return HeaderStatus::kUnreadable;
  return check_header(*h, *file_size);
}

}  // namespace vt::format
