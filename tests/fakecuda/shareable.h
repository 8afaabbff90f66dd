// shareable.h — POSIX file descriptor handles that work across the processes of a
// simulation (cuMemExportToShareableHandle, cuMemPoolExportToShareableHandle). The exported
// object's header (SharedObject, state.h) lives in a one-page memfd; the fd handed to the
// caller refers to that memfd, so a process that receives it (SCM_RIGHTS, pidfd_getfd, fork)
// maps the same page and finds the exporter's pid and handle there.
#pragma once

#include "state.h"

namespace fc {

// A new header of `kind` for this process, mapped; its memfd in *fd (close-on-exec).
// Null if the system refuses (no memfd, no memory).
SharedObject *shared_create(uint32_t kind, int *fd);
// Maps the header behind a received fd, or null if the fd is not one of ours.
SharedObject *shared_open(int fd, uint32_t kind);
void shared_unmap(SharedObject *o);
// A descriptor for the caller (a dup of `fd`), recorded so that the exporter can tell later
// whether the caller still holds it; -1 on failure.
int shared_export(int fd, std::vector<Export> *exports);
// Whether any fd this process exported for the object is still open.
bool shared_exports_open(std::vector<Export> &exports);

}  // namespace fc
