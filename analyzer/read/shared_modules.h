// Module files opened once per build for the whole process (issue 43: symbols read once per
// binary, by build-id, across the traces of a job, shared by the workers). shared_symbols.h
// shares the frames some trace has already named; a trace needing an address no earlier trace
// named opened the library again and read its DWARF again (libc's compressed separate debug info
// inflated once more). Here a module that a Symbolizer opened and found to be the traced build
// (the build-id its trace recorded) is kept, reported to libdwfl at bias 0 so that one handle
// serves every trace whatever its load address, and the next Symbolizer of the same build, file
// and debug-info search path uses it instead of opening its own.
//
// Thread-safe: the registry has a lock, and every libdw call on a shared handle holds that
// module's own lock (one libdw handle is not thread-safe; a job's workers symbolize at once,
// job_parallel.h). Bounded: past kMaxSharedModules, modules stay private to their Symbolizer.
// Entries are never freed: a job keeps each distinct library's debug info in memory for its
// whole duration (a single report kept it for its trace's already).
#pragma once

#include <elfutils/libdwfl.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace vt::analyzer {

// One module file in its own libdwfl session, reported at bias 0: it is looked up with addresses
// relative to the module's load bias (absolute ones for an ET_EXEC, see `absolute`).
struct DwflHandle {
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;  // libdwfl keeps a pointer to it
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;  // null when the file could not be opened or is another build
  // ET_EXEC (not position-independent): libdwfl ignores the reported base, the module sits at its
  // link-time addresses, so it is looked up with the absolute address (its traced bias is 0).
  bool absolute = false;

  DwflHandle() = default;
  DwflHandle(const DwflHandle&) = delete;
  DwflHandle& operator=(const DwflHandle&) = delete;
  ~DwflHandle();  // dwfl_end
};

struct SharedModule {
  std::mutex mu;  // held around every libdw call on handle, and while using what it returns
  std::unique_ptr<DwflHandle> handle;
};

inline constexpr size_t kMaxSharedModules = 256;

// The module opened for this build-id (as the trace recorded it), file (as opened: sysroot
// included), name reported to libdwfl and debug-info search path; null if none yet.
SharedModule* shared_module_find(const std::string& build_id, const std::string& file, const std::string& name,
                                 const std::string& search);

// Offers *handle (opened, its build-id checked equal to build_id). Returns the entry: *handle
// moved into a new one, or the one another thread added meanwhile (*handle left to the caller);
// null when the registry is full (*handle left to the caller, which keeps it private).
SharedModule* shared_module_add(const std::string& build_id, const std::string& file, const std::string& name,
                                const std::string& search, std::unique_ptr<DwflHandle>* handle);

// How many modules were added (each one's DWARF read at most once for the process): for tests.
size_t shared_modules_opened();

}  // namespace vt::analyzer
