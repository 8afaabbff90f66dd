// See run_output.h. The %-escapes are expanded by the library's own expand_pattern
// (common/env_config.h), compiled into the CLI, so -o and VRAMTRACE_OUTPUT follow one grammar.
#include "run_output.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "env_config.h"
#include "regular_file.h"

namespace vt::cli {

namespace {

constexpr uint64_t kFirstWindow = 1u << 20;  // a trace starts as one 1 MiB window (trace-format.md)

std::string absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return p;
  return std::string(cwd) + "/" + p;
}

std::string dir_of(const std::string& p) {
  size_t slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

// `pattern` with its escapes expanded for process `pid`; false with the reason in *why.
bool expand(const std::string& pattern, long pid, std::string* out, const char** why) {
  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  char buf[4096];
  if (!expand_pattern(pattern.c_str(), pid, host, buf, sizeof buf, why)) return false;
  *out = buf;
  return true;
}

// mkdir -p with mode 0700 for what it creates. Existing components are used as named (a /tmp that
// is a symlink is followed); each one created here is entered with O_NOFOLLOW, so a symlink swapped
// in at its name is refused, never followed.
bool make_dirs(const std::string& dir, std::string* err) {
  int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    *err = std::string("cannot open /: ") + strerror(errno);
    return false;
  }
  std::string done;
  for (size_t start = 1; start <= dir.size();) {
    size_t slash = dir.find('/', start);
    std::string comp = dir.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash == std::string::npos ? dir.size() + 1 : slash + 1;
    if (comp.empty()) continue;
    done += "/" + comp;
    int next = openat(fd, comp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(fd, comp.c_str(), 0700) != 0 && errno != EEXIST) {
        *err = "cannot create directory " + done + ": " + strerror(errno);
        close(fd);
        return false;
      }
      next = openat(fd, comp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next < 0 && errno == ELOOP) {
        *err = done + " turned into a symlink while it was being created; not followed";
        close(fd);
        return false;
      }
    }
    if (next < 0) {
      *err = "cannot use directory " + done + ": " + strerror(errno);
      close(fd);
      return false;
    }
    close(fd);
    fd = next;
  }
  close(fd);
  return true;
}

}  // namespace

bool prepare_output(const std::string& raw, RunOutput* out, std::string* err) {
  std::string value = absolute(raw.empty() ? std::string(".") : raw);
  const char* why = nullptr;
  std::string with_a, with_b;
  if (!expand(value, 1, &with_a, &why)) {
    *err = "-o '" + raw + "': " + why;
    return false;
  }
  expand(value, 2, &with_b, &why);
  bool per_pid = with_a != with_b;  // %p: the path differs per traced process
  out->value = value;
  out->scan_dir.clear();

  bool slash = value.back() == '/';
  std::string path = with_a;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st;
  bool exists = lstat(path.c_str(), &st) == 0;
  // "-o X: " or, when X was relative or a pattern, "-o X: /abs/path ".
  std::string named = "-o " + raw + (path == raw ? std::string(" ") : ": " + path + " ");
  if (exists && S_ISLNK(st.st_mode)) {
    struct stat target;
    // A symlink to a directory names that directory (as for mkdir -p); a symlink where the trace
    // file would go is never written through.
    if (stat(path.c_str(), &target) != 0 || !S_ISDIR(target.st_mode)) {
      *err = named + "is a symlink; vramtrace does not write a trace through one (name its target)";
      return false;
    }
    st = target;
  }
  if (exists && !S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
    *err = named + "is " + analyzer::file_type_name(st.st_mode) +
           ", not a directory or a regular file: no trace can be written there (nothing was run)";
    return false;
  }
  if (slash && exists && !S_ISDIR(st.st_mode)) {
    *err = named + "exists and is not a directory";
    return false;
  }
  bool dir_mode = slash || (exists && S_ISDIR(st.st_mode));
  std::string dir = dir_mode ? path : dir_of(path);
  if (per_pid && (dir_mode || dir_of(with_a) != dir_of(with_b))) {
    // %p names a directory: each process needs its own, which the library will not create. The
    // directories above the first pattern are the same for all: they must be there.
    std::string fixed = dir_of(value.substr(0, value.find('%')) + "x");
    struct stat fst;
    if (stat(fixed.c_str(), &fst) != 0 || !S_ISDIR(fst.st_mode)) {
      *err = "output directory " + fixed + " does not exist (-o " + raw + ": each process's directory goes in it)";
      return false;
    }
    return true;
  }
  std::string made;
  if (slash && !exists && !make_dirs(dir, &made)) {
    *err = "-o " + raw + ": " + made;
    return false;
  }
  struct stat dst;
  if (stat(dir.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    *err = "output directory " + dir + " does not exist" + (slash ? "" : " (end -o with / to have it created)");
    return false;
  }
  if (access(dir.c_str(), W_OK) != 0) {
    *err = "output directory " + dir + " is not writable: " + strerror(errno);
    return false;
  }
  out->scan_dir = dir;
  return true;
}

bool tracing_disabled() {
  const char* d = getenv("VRAMTRACE_DISABLE");
  return d && *d && strcmp(d, "0") != 0;
}

std::string no_trace_reason(const std::string& scan_dir) {
  if (tracing_disabled()) return "tracing is disabled (VRAMTRACE_DISABLE=" + std::string(getenv("VRAMTRACE_DISABLE")) + ")";
  struct stat dir;
  if (!scan_dir.empty() && (stat(scan_dir.c_str(), &dir) != 0 || !S_ISDIR(dir.st_mode)))
    return "the output directory " + scan_dir + " is gone (removed while the program ran?)";
  struct statvfs fs;
  if (!scan_dir.empty() && statvfs(scan_dir.c_str(), &fs) == 0) {
    uint64_t free_bytes = uint64_t(geteuid() == 0 ? fs.f_bfree : fs.f_bavail) * fs.f_frsize;
    if (free_bytes < kFirstWindow + (64u << 10))
      return "the file system of " + scan_dir + " is full (" + std::to_string(free_bytes) + " bytes free; a trace needs 1 MiB to start)";
    if (fs.f_files && (geteuid() == 0 ? fs.f_ffree : fs.f_favail) == 0)
      return "the file system of " + scan_dir + " has no free inodes";
  }
  struct rlimit lim;
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < kFirstWindow + (64u << 10))
    return "the file size limit (ulimit -f, " + std::to_string(uint64_t(lim.rlim_cur)) + " bytes) is below a trace's first MiB";
  return kNoMemoryCall;
}

}  // namespace vt::cli
