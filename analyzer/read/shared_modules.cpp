// See shared_modules.h.
#include "shared_modules.h"

#include <cstdlib>
#include <unordered_map>

namespace vt::analyzer {

DwflHandle::~DwflHandle() {
  if (dwfl) dwfl_end(dwfl);
  free(debuginfo_path);
}

namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<std::string, SharedModule*> modules;  // key() -> entry
  size_t added = 0;
};

Registry& registry() {
  static Registry* r = new Registry;  // (never destroyed: workers may still run at exit)
  return *r;
}

std::string key(const std::string& build_id, const std::string& file, const std::string& name,
                const std::string& search) {
  std::string k = build_id;  // ('\0' cannot occur in a path: the parts stay apart)
  k += '\0';
  k += file;
  k += '\0';
  k += name;
  k += '\0';
  k += search;
  return k;
}

}  // namespace

SharedModule* shared_module_find(const std::string& build_id, const std::string& file, const std::string& name,
                                 const std::string& search) {
  Registry& r = registry();
  std::string k = key(build_id, file, name, search);
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.modules.find(k);
  return it == r.modules.end() ? nullptr : it->second;
}

SharedModule* shared_module_add(const std::string& build_id, const std::string& file, const std::string& name,
                                const std::string& search, std::unique_ptr<DwflHandle>* handle) {
  Registry& r = registry();
  std::string k = key(build_id, file, name, search);
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.modules.find(k);
  if (it != r.modules.end()) return it->second;
  if (r.modules.size() >= kMaxSharedModules) return nullptr;
  auto* m = new SharedModule;  // (never destroyed, see the header)
  m->handle = std::move(*handle);
  r.modules.emplace(std::move(k), m);
  ++r.added;
  return m;
}

size_t shared_modules_opened() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.added;
}

}  // namespace vt::analyzer
