// Reading and checking a trace's file header: the one validator used by everything that opens a
// trace (the reader, `vramtrace run` listing its run's traces, and the writer deciding whether a
// file already at its path is a stale trace it may replace). No heap, no exceptions: the writer
// calls it inside the traced process.
#pragma once

#include <cstdint>

#include "trace_format.h"

namespace vt::format {

inline constexpr uint32_t kMaxGeometry = 64u << 20;  // header and chunk sizes a reader accepts

enum class HeaderStatus : uint8_t {
  kValid,        // readable by this build (a newer minor too: its unknown records are skipped)
  kEmpty,        // the file has no bytes
  kNotATrace,    // no vramtrace magic (or too short to hold it)
  kCutInHeader,  // the magic, but the file ends before the header's fields do
  kOtherMajor,   // a trace of another major version: not readable by this build
  kCorrupt,      // header or chunk size out of range
  kUnreadable,   // fstat or pread failed (errno says why)
};

// Checks a header whose bytes were read from a file of `file_size` bytes (`h` holds
// min(file_size, sizeof h) of them).
HeaderStatus check_header(const FileHeader& h, uint64_t file_size);

// Reads the header of the open file `fd` (pread at offset 0) into *h and checks it; the file's
// size goes to *file_size. Never blocks on a regular file; the caller decides what to open.
HeaderStatus read_header(int fd, FileHeader* h, uint64_t* file_size);

// True when the file is one of ours, readable or not (magic present and the header complete).
inline bool is_vramtrace_header(HeaderStatus s) {
  return s == HeaderStatus::kValid || s == HeaderStatus::kOtherMajor || s == HeaderStatus::kCorrupt;
}

}  // namespace vt::format
