// See name_table.h.
#include "name_table.h"

#include <cstring>

namespace vt::cupti {

uint64_t name_check(const char* s) {
  size_t n = strlen(s);
  uint32_t h = 2166136261u;  // FNV-1a over the first 64 bytes
  for (size_t i = 0; i < n && i < 64; ++i) h = (h ^ uint8_t(s[i])) * 16777619u;
  return (uint64_t(n) << 32) | h;
}

void NameTable::clear() {
  memset(slots_, 0, sizeof slots_);
  used_ = 0;
}

uint32_t NameTable::intern(const char* name, bool* is_new) {
  *is_new = false;
  if (!name) return 0;
  uint64_t check = name_check(name);
  uint64_t k = reinterpret_cast<uintptr_t>(name);
  uint32_t i = uint32_t((k >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (kSlots - 1);
  for (uint32_t probe = 0; probe < kSlots; ++probe, i = (i + 1) & (kSlots - 1)) {
    Slot& s = slots_[i];
    if (s.key == name) {
      if (s.check == check) return s.id;
      s.check = check;  // the pointer now holds another name: a new id for it
      s.id = next_id_++;
      *is_new = true;
      return s.id;
    }
    if (!s.key) break;
  }
  if (used_ + 1 > kSlots * 3 / 4) {
    clear();
    return intern(name, is_new);
  }
  i = uint32_t((k >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (kSlots - 1);
  while (slots_[i].key) i = (i + 1) & (kSlots - 1);
  slots_[i] = Slot{name, check, next_id_++};
  ++used_;
  *is_new = true;
  return slots_[i].id;
}

}  // namespace vt::cupti
