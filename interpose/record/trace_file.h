// The trace file sink: creates the file safely, grows it in 1 MiB windows that are
// posix_fallocate'd (no SIGBUS on a full disk) and mapped MAP_SHARED (data survives SIGKILL),
// and hands out 64 KiB chunks to writer threads with one atomic add. Windows are never unmapped:
// hooks keep firing after our destructor, so nothing here is ever torn down; but the pages of the
// windows behind the newest few leave the process's memory (MADV_DONTNEED: they are the file's).
//
// The file's descriptor belongs to the program's descriptor table, which the program may close
// (daemons close 3..1023) and reuse for its own files. So it is kept out of the way (close-on-
// exec, moved near the top of the usual range) and it is only ever used after checking that it
// still is our file (st_dev + st_ino): before each window is added, and before it is closed.
// When it is not, the file is reopened by its absolute path (O_NOFOLLOW, identity checked
// again); when that fails too, the file is lost: tracing stops with one line and the header,
// which stays mapped, says tracing failed. Records are written only through the mappings, which
// are bound to our file whatever happens to the descriptor.
#pragma once

#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>

#include "trace_format.h"

namespace vt {

struct Config;

class TraceFile {
 public:
  // Creates the trace for this process. A fixed file name already holding the trace of a live
  // process (our parent, say) is left alone and "<path>.<pid>" is used instead; a stale file is
  // replaced; a symlink or anything else that is not a regular file (a device, a FIFO) at the
  // target is refused. Logs one line and returns false on failure.
  bool open(const Config& cfg, long pid, long ppid);

  // A fresh zeroed chunk owned by thread `tid`, or nullptr once writing has failed.
  format::ChunkHeader* claim_chunk(uint32_t tid, uint64_t base_ns);

  format::FileHeader* header() const { return header_; }
  const char* path() const { return path_; }

  // Marks the trace as closed cleanly. Later events are still accepted and written.
  void mark_closed(uint64_t end_ns);
  // The process leaves through _exit/_Exit(status): closed, and how.
  void mark_quick_exit(uint64_t end_ns, int status);
  // The pid the file was opened for (0 when none is open): a vfork child shares our memory.
  uint64_t owner_pid() const { return header_ ? header_->pid : 0; }

  // After fork: the child forgets the parent's file without touching it.
  void abandon();

 private:
  static constexpr uint64_t kWindowSize = 1u << 20;
  static constexpr uint32_t kMaxWindows = 1u << 18;  // 256 GiB of trace
  static constexpr uint64_t kKeptWindows = 4;  // the newest windows stay in memory (see release_old_window)
  uint8_t* window(uint64_t index);
  void let_go_of_fd();  // (window(): the descriptor is closed once the window is mapped)
  void release_old_window(uint64_t index);
  bool create_file(const char* path, long pid);
  // Our file's descriptor, verified (or reopened); -1 with errno set when the file is lost.
  int owned_fd(struct stat* st);
  void stop(const char* fmt, const char* arg);

  int fd_ = -1;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  char path_[4096] = {};  // absolute: the program may chdir
  format::FileHeader* header_ = nullptr;
  std::atomic<uint64_t> next_chunk_{0};
  std::atomic<bool> failed_{false};
  pthread_mutex_t grow_mu_ = PTHREAD_MUTEX_INITIALIZER;
  static std::atomic<uint8_t*> windows_[kMaxWindows];
  std::atomic<uint64_t> windows_high_{0};  // the highest window added (under grow_mu_)
};

}  // namespace vt
