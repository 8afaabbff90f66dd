// Kernel names written once each: a name gets an id and one kTagKernelName record the first time
// it is seen; kernel records carry the id (a training step launches the same few hundred kernels
// thousands of times, and a mangled template name can be kilobytes).
//
// Keyed by CUPTI's name pointer (CUPTI shares one string among all records of a kernel), checked
// against the length and a hash of the first bytes so that a pointer reused after a module
// unload is not taken for the old name. Fixed size, no allocation; when it fills up it is
// cleared and names are simply announced again under new ids (readers keep every id they see).
// Single writer: only the thread draining buffers (under the session's lock) calls intern().
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt::cupti {

class NameTable {
 public:
  static constexpr uint32_t kSlots = 4096;  // power of two

  // The id of `name` (1, 2, ...); *is_new when the caller must write the name record first.
  uint32_t intern(const char* name, bool* is_new);
  void clear();
  uint32_t size() const { return used_; }

 private:
  struct Slot {
    const char* key;
    uint64_t check;
    uint32_t id;
  };
  Slot slots_[kSlots] = {};
  uint32_t used_ = 0;
  uint32_t next_id_ = 1;
};

// Length and hash of the first 64 bytes of s, packed (for the pointer-reuse check).
uint64_t name_check(const char* s);

}  // namespace vt::cupti
