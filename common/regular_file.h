// Opening a file we were told to read (a trace, a directory entry, a module named by a trace, a
// summary in /dev/shm) without trusting what it is: never blocking (a FIFO or a tty would hang
// an open or a read), never a controlling terminal, and nothing but a regular file accepted.
#pragma once

#include <sys/stat.h>

#include <string>

namespace vt::analyzer {

enum OpenFlags : unsigned {
  kFollow = 0,
  kNoFollow = 1u << 0,  // refuse a symlink in the last component (O_NOFOLLOW)
};

// Opens `path` read-only with O_NONBLOCK|O_NOCTTY|O_CLOEXEC, checks with fstat that it is a
// regular file, then clears O_NONBLOCK. Returns the descriptor, or -1 with the reason in *why
// ("cannot open: <strerror>", "not a regular file (a FIFO)", ...); *st receives fstat's answer.
int open_regular_file(const std::string& path, std::string* why, unsigned flags = kFollow, struct stat* st = nullptr);

// "a directory", "a FIFO", "a character device", "a block device", "a socket", "a symlink",
// "a regular file" or "an unknown file type".
const char* file_type_name(mode_t mode);

}  // namespace vt::analyzer
