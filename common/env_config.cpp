// See config.h.
#include "env_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdarg>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "log.h"

namespace vt {

bool expand_pattern(const char* pattern, long pid, const char* host, char* out, size_t cap,
                    const char** why) {
  size_t n = 0;
  auto put = [&](const char* s, size_t len) {
    if (n + len >= cap) return false;
    memcpy(out + n, s, len);
    n += len;
    return true;
  };
  for (const char* p = pattern; *p; ++p) {
    bool ok;
    if (*p != '%') {
      ok = put(p, 1);
    } else {
      char c = p[1];
      if (c == 'p') {
        char num[32];
        int len = snprintf(num, sizeof num, "%ld", pid);
        ok = put(num, len);
      } else if (c == 'h') {
        ok = put(host, strlen(host));
      } else if (c == '%') {
        ok = put("%", 1);
      } else {
        *why = "unknown %-escape (use %p for the pid, %h for the host name, %% for %)";
        return false;
      }
      ++p;
    }
    if (!ok) {
      *why = "path too long";
      return false;
    }
  }
  out[n] = '\0';
  return true;
}

namespace {

// The one line about a bad value: into why[cap] when the caller words it (vramtrace run),
// else on stderr.
__attribute__((format(printf, 3, 4))) void complain(char* why, size_t cap, const char* fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (why && cap)
    snprintf(why, cap, "%s", line);
  else
    log_line_once_per_run("%s; tracing off", line);
}

const char* (*g_fallback)(const char*) = nullptr;
const char* g_base_dir = nullptr;  // relative outputs are resolved against it (set_config_base_dir)

const char* config_env(const char* name) {
  const char* v = getenv(name);
  return v || !g_fallback ? v : g_fallback(name);
}

}  // namespace

void set_config_fallback(const char* (*fallback)(const char* name)) { g_fallback = fallback; }
void set_config_base_dir(const char* dir) { g_base_dir = dir; }

bool load_config(Config* out, long pid, char* why_out, size_t why_cap) {
  *out = Config{};
  const char* disable = config_env("VRAMTRACE_DISABLE");
  if (disable && disable[0] && strcmp(disable, "0") != 0) return false;

  const char* session = config_env("VRAMTRACE_SESSION");
  if (session) snprintf(out->session, sizeof out->session, "%s", session);

  if (const char* d = config_env("VRAMTRACE_STACK_DEPTH")) {
    char* end = nullptr;
    long v = strtol(d, &end, 10);
    if (!*d || *end || v < 0 || v > 256) {
      complain(why_out, why_cap, "bad VRAMTRACE_STACK_DEPTH '%s' (a number of frames, 0 to 256)", d);
      return false;
    }
    out->stack_depth = int(v);
  }
  if (const char* f = config_env("VRAMTRACE_FREE_STACKS"); f && *f) {  // empty = unset
    if (strcmp(f, "1") == 0) {
      out->free_stacks = true;
    } else if (strcmp(f, "0") != 0) {
      complain(why_out, why_cap, "bad VRAMTRACE_FREE_STACKS '%s' (use 0 or 1)", f);
      return false;
    }
  }
  if (const char* u = config_env("VRAMTRACE_UNWINDER"); u && *u) {  // empty = unset
    if (strcmp(u, "libunwind") == 0) {
      out->unwinder = 0;
    } else if (strcmp(u, "vramtrace") == 0) {
      out->unwinder = 1;
    } else if (strcmp(u, "checked") == 0) {
      out->unwinder = 2;
    } else {
      complain(why_out, why_cap, "bad VRAMTRACE_UNWINDER '%s' (use vramtrace, libunwind or checked)", u);
      return false;
    }
  }
  if (const char* py = config_env("VRAMTRACE_PYTHON")) {
    if (strcmp(py, "0") == 0) {
      out->python = false;
    } else if (strcmp(py, "1") != 0) {
      complain(why_out, why_cap, "bad VRAMTRACE_PYTHON '%s' (use 0 or 1)", py);
      return false;
    }
  }

  if (const char* k = config_env("VRAMTRACE_KERNELS"); k && *k) {  // empty = unset
    if (strcmp(k, "0") == 0) {
      out->kernels = false;
    } else if (strcmp(k, "1") != 0) {
      complain(why_out, why_cap, "bad VRAMTRACE_KERNELS '%s' (use 0 or 1)", k);
      return false;
    }
  }

  if (const char* m = config_env("VRAMTRACE_CUPTI_MEMORY"); m && *m) {  // empty = unset
    if (strcmp(m, "0") == 0) {
      out->cupti_memory = false;
    } else if (strcmp(m, "1") != 0) {
      complain(why_out, why_cap, "bad VRAMTRACE_CUPTI_MEMORY '%s' (use 0 or 1)", m);
      return false;
    }
  }

  const char* sink = config_env("VRAMTRACE_SINK");
  if (sink && strcmp(sink, "null") == 0) {
    out->null_sink = true;
    out->enabled = true;
    return true;
  } else if (sink && *sink && strcmp(sink, "file") != 0) {
    complain(why_out, why_cap, "bad VRAMTRACE_SINK '%s' (use file or null)", sink);
    return false;
  }

  const char* output = config_env("VRAMTRACE_OUTPUT");
  if (output && !output[0]) {
    complain(why_out, why_cap, "VRAMTRACE_OUTPUT is set but empty");
    return false;
  }
  if (!output) output = ".";

  char host[256] = "unknown";
  gethostname(host, sizeof host - 1);
  // Static: in a traced process this runs under the session's open lock, on the thread whose first
  // memory call it is (its stack may be a small one); the CLI is single-threaded here.
  static char expanded[4096];
  const char* why = nullptr;
  if (!expand_pattern(output, pid, host, expanded, sizeof expanded, &why)) {
    complain(why_out, why_cap, "bad VRAMTRACE_OUTPUT '%s': %s", output, why);
    return false;
  }
  if (expanded[0] != '/' && g_base_dir) {  // relative: to the directory the program started in
    static char joined[sizeof expanded];
    const char* rel = expanded;
    while (rel[0] == '.' && rel[1] == '/') rel += 2;  // "./traces" is "traces" there
    int w = snprintf(joined, sizeof joined, "%s/%s", g_base_dir, rel[0] == '.' && rel[1] == '\0' ? "" : rel);
    if (w < 0 || size_t(w) >= sizeof joined) {
      complain(why_out, why_cap, "bad VRAMTRACE_OUTPUT '%s': path too long", output);
      return false;
    }
    memcpy(expanded, joined, sizeof expanded);
  }

  struct stat st;
  size_t len = strlen(expanded);
  const bool stat_ok = stat(expanded, &st) == 0;
  const bool stat_denied = !stat_ok && errno != ENOENT && errno != ENOTDIR;  // (a seccomp sandbox)
  bool is_dir = (stat_ok && S_ISDIR(st.st_mode)) || expanded[len - 1] == '/';
  if (!is_dir && stat_denied) {  // ask open instead
    int d = open(expanded, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
      is_dir = true;
      close(d);
    }
  }
  if (is_dir) {
    int w = snprintf(out->path, sizeof out->path, "%s%svramtrace.%ld.trace", expanded,
                     expanded[len - 1] == '/' ? "" : "/", pid);
    if (w < 0 || size_t(w) >= sizeof out->path) {
      complain(why_out, why_cap, "bad VRAMTRACE_OUTPUT '%s': path too long", output);
      return false;
    }
  } else {
    snprintf(out->path, sizeof out->path, "%s", expanded);
  }
  out->enabled = true;
  return true;
}

}  // namespace vt
