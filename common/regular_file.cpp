// See regular_file.h.
#include "regular_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vt::analyzer {

const char* file_type_name(mode_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symlink";
  }
  return "an unknown file type";
}

int open_regular_file(const std::string& path, std::string* why, unsigned flags, struct stat* out) {
  int oflags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | ((flags & kNoFollow) ? O_NOFOLLOW : 0);
  int fd = ::open(path.c_str(), oflags);
  if (fd < 0) {
    int err = errno;
    *why = (err == ELOOP && (flags & kNoFollow)) ? "is a symlink (not followed)" : std::string("cannot open: ") + strerror(err);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *why = std::string("cannot stat: ") + strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = std::string("not a regular file (") + file_type_name(st.st_mode) + ")";
    ::close(fd);
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  if (out) *out = st;
  return fd;
}

}  // namespace vt::analyzer
