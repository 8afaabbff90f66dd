// The temporary directories a test process makes, removed when it exits: a test run makes
// hundreds (traces, job directories, outputs), and left behind they filled the disk of a machine
// that runs the suites often (26,000 of the end-to-end tests', then 3,300 of the unit tests', 9 GB).
// VT_KEEP_TEST_DIRS=1 keeps them for a look after a failure. Only the process that made a
// directory removes it (a forked child that returns through exit() must not).
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace vt::test_dirs {

namespace detail {
inline std::vector<std::string>* g_dirs = nullptr;
inline pid_t g_owner = 0;
inline int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return remove(path), 0; }
inline void remove_all() {
  if (!g_dirs || getpid() != g_owner) return;
  const char* keep = getenv("VT_KEEP_TEST_DIRS");
  if (keep && *keep == '1') return;
  for (const std::string& d : *g_dirs) nftw(d.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
}  // namespace detail

// A new directory named `prefix` + 6 random characters (mkdtemp), removed at exit.
inline std::string make(const std::string& prefix) {
  std::string tmpl = prefix + "XXXXXX";
  if (!mkdtemp(tmpl.data())) return "";
  if (!detail::g_dirs) {
    detail::g_dirs = new std::vector<std::string>;
    detail::g_owner = getpid();
    atexit(detail::remove_all);
  }
  if (getpid() == detail::g_owner) detail::g_dirs->push_back(tmpl);
  return tmpl;
}

}  // namespace vt::test_dirs
