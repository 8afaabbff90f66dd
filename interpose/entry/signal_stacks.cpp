// The exported sigaltstack: the program's alternate signal stacks, thread by thread, for the
// hook's room check (stack_room.h). The system call itself, as glibc's wrapper makes it.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "stack_room.h"

extern "C" __attribute__((visibility("default"))) int sigaltstack(const stack_t* ss, stack_t* old) {
  const long rc = syscall(SYS_sigaltstack, ss, old);
  if (rc == 0) vt::note_alt_stack(ss);
  return int(rc);
}
