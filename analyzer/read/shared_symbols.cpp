// See shared_symbols.h.
#include "shared_symbols.h"

#include <mutex>
#include <unordered_map>

namespace vt::analyzer {

namespace {

struct Shared {
  std::mutex mu;
  std::unordered_map<std::string, uint32_t> builds;  // build-id -> a small number
  std::unordered_map<uint64_t, std::vector<Frame>> frames;  // (build number << 40 | offset) -> frames
  size_t entries = 0;
};

Shared& shared() {
  static Shared* s = new Shared;  // (never destroyed: workers may still run at exit)
  return *s;
}

// The key, or false for an offset too large to pack (not cached).
bool key_of(Shared& s, const std::string& build_id, uint64_t offset, bool add, uint64_t* key) {
  if (offset >= (uint64_t(1) << 40)) return false;
  auto it = s.builds.find(build_id);
  if (it == s.builds.end()) {
    if (!add || s.builds.size() >= (1u << 20)) return false;
    it = s.builds.emplace(build_id, uint32_t(s.builds.size())).first;
  }
  *key = uint64_t(it->second) << 40 | offset;
  return true;
}

}  // namespace

bool shared_symbols_lookup(const std::string& build_id, uint64_t offset, std::vector<Frame>* out) {
  Shared& s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t key;
  if (!key_of(s, build_id, offset, false, &key)) return false;
  auto it = s.frames.find(key);
  if (it == s.frames.end()) return false;
  *out = it->second;
  return true;
}

void shared_symbols_store(const std::string& build_id, uint64_t offset, const std::vector<Frame>& frames) {
  Shared& s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  uint64_t key;
  if (s.entries >= kMaxSharedSymbols || !key_of(s, build_id, offset, true, &key)) return;
  if (s.frames.emplace(key, frames).second) ++s.entries;
}

}  // namespace vt::analyzer
