// See user_frames.h.
#include "user_frames.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>

namespace vt::analyzer {

namespace {

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Modules whose frames are never the user's code: the interpreter, the FFI, libc/libstdc++, the
// CUDA runtime and driver, vramtrace itself.
bool machinery_module(const std::string& module) {
  std::string m = base_name(module);
  return starts_with(m, "libpython") || starts_with(m, "libffi") || starts_with(m, "_ctypes") ||
         starts_with(m, "libc.so") || starts_with(m, "libc-") || starts_with(m, "ld-linux") ||
         starts_with(m, "libstdc++") || starts_with(m, "libgcc_s") || starts_with(m, "libvramtrace") ||
         starts_with(m, "libcudart") || starts_with(m, "libcuda.so") || starts_with(m, "python3") || m == "python";
}

bool machinery_function(const std::string& fn) {
  static const char* const kPrefixes[] = {
      "_PyEval_", "PyEval_", "_PyObject_", "PyObject_", "_PyFunction_", "PyVectorcall", "_Py", "method_vectorcall",
      "cfunction_", "slot_tp_", "vectorcall", "ffi_", "_ctypes_", "PyCFuncPtr_", "_call_function_pointer",
      "__libc_start", "pythread_wrapper", "thread_run",
      "pybind11::", "vt::", "c10::Dispatcher", "c10::impl::", "c10::BoxedKernel", "c10::KernelFunction",
      "c10::OperatorHandle", "at::_ops::", "torch::autograd::THPVariable_", "torch::autograd::dispatch_",
      "c10::reportMemoryUsageToProfiler",
  };
  static const char* const kNames[] = {"_start", "start_thread", "__clone", "__clone3", "clone3", "Py_RunMain",
                                       "Py_BytesMain", "pymain_run_python"};
  for (const char* p : kPrefixes)
    if (starts_with(fn, p)) return true;
  for (const char* n : kNames)
    if (fn == n) return true;
  return false;
}

}  // namespace

bool is_autograd_thread(const std::string& thread_name) { return starts_with(thread_name, "pt_autograd"); }

bool is_library_python_frame(const Frame& f) {
  if (!f.python) return false;
  const std::string& p = f.file;
  if (p.find("/site-packages/") != std::string::npos || p.find("/dist-packages/") != std::string::npos ||
      starts_with(p, "<frozen "))
    return true;
  // The standard library: .../lib/python3.N/ (Debian, pyenv, conda, venvs' base), also lib64.
  for (const char* dir : {"/lib/python3.", "/lib64/python3."}) {
    size_t at = p.find(dir);
    if (at == std::string::npos) continue;
    size_t i = at + strlen(dir), digits = i;
    while (i < p.size() && isdigit(static_cast<unsigned char>(p[i]))) ++i;
    if (i > digits && (p.compare(i, 1, "/") == 0 || p.compare(i, 2, "t/") == 0)) return true;  // (3.13t: free-threaded)
  }
  return false;
}

bool is_machinery_frame(const Frame& f) {
  if (f.python) return false;
  return machinery_function(f.function) || machinery_module(f.module);
}

std::vector<Frame> user_stack(const std::vector<Frame>& stack, bool all, size_t* hidden) {
  *hidden = 0;
  if (all) return stack;
  std::vector<Frame> out;
  bool python = false;
  for (const Frame& f : stack) python |= f.python;
  for (const Frame& f : stack)
    if (python ? f.python : !is_machinery_frame(f)) out.push_back(f);
  if (out.empty()) return stack;
  *hidden = stack.size() - out.size();
  return out;
}

std::string user_stack_key(const std::vector<Frame>& stack, bool all) {
  size_t hidden = 0;
  std::string k;
  for (const Frame& f : user_stack(stack, all, &hidden)) {
    k += f.python ? "py:" : "";
    k += f.function;
    k += '@';
    k += f.file.empty() ? f.module + "+" + std::to_string(f.offset) : f.file + ":" + std::to_string(f.line);
    k += ';';
  }
  return k;
}

void add_thread_shares(std::vector<ThreadShare>& to, const std::vector<ThreadShare>& from) {
  for (const ThreadShare& f : from) {
    auto it = std::find_if(to.begin(), to.end(), [&](const ThreadShare& t) { return t.tid == f.tid; });
    if (it == to.end()) to.push_back(f);
    else it->bytes += f.bytes;
  }
  std::stable_sort(to.begin(), to.end(), [](const ThreadShare& a, const ThreadShare& b) { return a.bytes > b.bytes; });
}

std::vector<SiteGroup> merge_shown(const std::vector<SiteGroup>& groups, bool all) {
  if (all) return groups;
  std::vector<SiteGroup> out;
  std::map<std::string, size_t> index;
  for (const SiteGroup& g : groups) {
    std::string key = g.stack.empty() ? "#" + std::to_string(g.stack_id) : user_stack_key(g.stack, false);
    key += "|" + g.kind + "|" + std::to_string(g.device);
    auto [it, added] = index.emplace(key, out.size());
    if (added) {
      out.push_back(g);
    } else {
      out[it->second].bytes += g.bytes;
      out[it->second].count += g.count;
      out[it->second].share += g.share;
      add_thread_shares(out[it->second].threads, g.threads);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SiteGroup& a, const SiteGroup& b) { return a.bytes > b.bytes; });
  return out;
}

const Frame* user_frame(const std::vector<Frame>& stack) {
  if (stack.empty()) return nullptr;
  for (const Frame& f : stack)
    if (f.python && !is_library_python_frame(f)) return &f;
  for (const Frame& f : stack)
    if (f.python) return &f;
  for (const Frame& f : stack)
    if (!is_machinery_frame(f) && f.function != "??") return &f;
  return &stack[0];
}

std::string user_line(const std::vector<Frame>& stack) {
  const Frame* f = user_frame(stack);
  if (!f) return "";
  if (!f->file.empty()) return base_name(f->file) + ":" + std::to_string(f->line) + " in " + f->function;
  if (f->function != "??") return f->function + " (" + base_name(f->module) + ")";
  char b[32];
  snprintf(b, sizeof b, "+0x%llx", static_cast<unsigned long long>(f->offset));
  return base_name(f->module) + b;
}

std::string stack_library(const std::vector<Frame>& stack) {
  for (const Frame& f : stack) {
    if (f.python || f.module.empty() || f.module == "??") continue;
    std::string m = base_name(f.module);
    if (starts_with(m, "libvramtrace") || starts_with(m, "libcudart") || starts_with(m, "libcuda.so")) continue;
    return m;
  }
  return "";
}

}  // namespace vt::analyzer
