// libunwind's descriptors, kept out of the program's way. libunwind validates memory (for
// frames without unwind info) through a pipe it opens with pipe2() at its first use and keeps
// for the life of the process: it would take the program's lowest free descriptors (3 and 4),
// and once the program closed and reused those numbers, libunwind's read(), write() and close()
// on them would consume, overwrite or close the program's own files. Its calls to pipe2, read,
// write, close, open, msync and syscall are redirected here through libunwind's own GOT entries (no
// other library is touched): the pipe is moved near the top of the usual descriptor range,
// remembered by inode, and read, written or closed only while it still is that pipe; every call
// is made as a raw system call, so no cancellation point runs while we unwind. Where the kernel
// allows process_vm_readv on the process itself (nearly everywhere), there is no pipe at all:
// the one-byte check the pipe made is made that way (unwinder_fds.cpp), and libunwind holds no
// descriptor.
#pragma once

namespace vt {

// Patches the loaded libunwind (once, from our constructor). False when it could not be found.
bool guard_unwinder_descriptors();

}  // namespace vt
