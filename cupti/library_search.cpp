// See library_search.h.
#include "library_search.h"

#include <link.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include <cupti_version.h>

namespace vt::cupti {

namespace {

const char* base_name(const char* p) {
  const char* s = strrchr(p, '/');
  return s ? s + 1 : p;
}

bool starts_with(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

// libcupti.so.13, or an auditwheel-renamed copy inside a wheel (libcupti-1a2b3c4d.so.12).
bool is_cupti(const char* path) {
  const char* b = base_name(path);
  return starts_with(b, "libcupti.so") || starts_with(b, "libcupti-");
}

void dir_of(const char* path, char* out, size_t cap) {
  const char* s = strrchr(path, '/');
  size_t n = s ? size_t(s - path) : 0;
  if (n >= cap) n = cap - 1;
  memcpy(out, path, n);
  out[n] = '\0';
}

// The versioned name first (the unversioned link is often absent outside a toolkit).
void add_both(Candidates* c, const char* dir, int major) {
  char name[64];
  if (major > 0) {
    snprintf(name, sizeof name, "libcupti.so.%d", major);
    c->add(dir, name);
  }
  c->add(dir, "libcupti.so");
}

void add_toolkit(Candidates* c, const char* root, int major) {
  if (!root || !*root) return;
  char dir[kMaxPath];
  for (const char* sub : {"/lib64", "/extras/CUPTI/lib64", "/lib"}) {
    snprintf(dir, sizeof dir, "%s%s", root, sub);
    add_both(c, dir, major);
  }
}

}  // namespace

void Candidates::add(const char* dir, const char* name) {
  if (n >= kMaxCandidates) return;
  char p[kMaxPath];
  int w = dir && *dir ? snprintf(p, sizeof p, "%s/%s", dir, name) : snprintf(p, sizeof p, "%s", name);
  if (w < 0 || size_t(w) >= sizeof p) return;
  for (int i = 0; i < n; ++i)
    if (strcmp(path[i], p) == 0) return;
  memcpy(path[n++], p, size_t(w) + 1);
}

int soname_major(const char* path) {
  const char* b = base_name(path);
  const char* so = strstr(b, ".so.");
  if (!so) return 0;
  int major = atoi(so + 4);
  return major > 0 && major < 1000 ? major : 0;
}

void cupti_candidates(const SearchInputs& in, Candidates* out) {
  out->n = 0;
  out->exclusive = false;
  if (in.cupti_library && *in.cupti_library) {
    out->exclusive = true;
    out->add(nullptr, in.cupti_library);
    return;
  }
  int major = 0;
  for (int i = 0; i < in.n_loaded; ++i)
    if (starts_with(base_name(in.loaded[i]), "libcudart.so") && (major = soname_major(in.loaded[i])) > 0) break;
  if (major == 0) major = in.driver_major;
  if (major == 0) major = CUPTI_API_VERSION / 10000;

  for (int i = 0; i < in.n_loaded; ++i)
    if (is_cupti(in.loaded[i])) out->add(nullptr, in.loaded[i]);

  for (int i = 0; i < in.n_loaded; ++i) {
    const char* p = in.loaded[i];
    if (!starts_with(base_name(p), "libcudart.so")) continue;
    int m = soname_major(p);
    if (m == 0) m = major;
    char d[kMaxPath], alt[kMaxPath];
    dir_of(p, d, sizeof d);
    add_both(out, d, m);
    for (const char* rel : {"/../../cuda_cupti/lib", "/../extras/CUPTI/lib64", "/../../../extras/CUPTI/lib64"}) {
      snprintf(alt, sizeof alt, "%s%s", d, rel);
      add_both(out, alt, m);
    }
  }

  add_toolkit(out, in.cuda_home, major);
  add_toolkit(out, in.cuda_path, major);
  add_toolkit(out, "/usr/local/cuda", major);
  add_both(out, nullptr, major);
}

namespace {
struct Collect {
  char (*storage)[kMaxPath];
  int max, n;
};
int collect(dl_phdr_info* info, size_t, void* arg) {
  Collect* c = static_cast<Collect*>(arg);
  const char* name = info->dlpi_name;
  if (!name || !*name || c->n >= c->max) return 0;
  const char* b = base_name(name);
  if (!is_cupti(name) && !starts_with(b, "libcudart.so")) return 0;
  snprintf(c->storage[c->n++], kMaxPath, "%s", name);
  return 0;
}
}  // namespace

int loaded_cuda_objects(char (*storage)[kMaxPath], int max) {
  Collect c{storage, max, 0};
  dl_iterate_phdr(collect, &c);
  return c.n;
}

}  // namespace vt::cupti
