// Which frames of a stack are the user's: Python frames first where there are any; the
// interpreter's own machinery (_PyEval_*, _PyObject_*, ctypes/libffi, pybind11 dispatch, torch's
// C++ dispatcher), libc's start-up frames and vramtrace's own are machinery. One rule for every
// output that shows a stack (text, HTML, folded, diff) and for the lines remedies name.
#pragma once

#include <string>
#include <vector>

#include "report_model.h"
#include "symbolizer.h"

namespace vt::analyzer {

// True for a frame of the machinery between the user's code and the allocation.
bool is_machinery_frame(const Frame& f);

// True for a Python frame of installed or standard-library code (site-packages, dist-packages,
// .../lib/python3.N/, frozen modules): torch/nn/modules/linear.py is not the line a user fixes.
// PyTorch's autograd worker threads (pt_autograd_N, one per device: backward runs there, with the
// Python frames of the thread that called backward lent to them).
bool is_autograd_thread(const std::string& thread_name);

bool is_library_python_frame(const Frame& f);

// The frames a person reads first, innermost first: the Python frames when there are any, else
// the native frames that are not machinery; *hidden gets how many were left out (shown as one
// "... N native frames" marker). A stack that would show nothing is shown whole. With `all`
// (--native) every frame, none hidden.
std::vector<Frame> user_stack(const std::vector<Frame>& stack, bool all, size_t* hidden);

// A key for what user_stack shows (groups that differ only in hidden frames share it).
std::string user_stack_key(const std::vector<Frame>& stack, bool all);

// Groups as a person sees them: those whose shown frames are the same are one row (bytes and
// counts summed, the first one's stack and kind kept), biggest first; with `all`, unchanged.
std::vector<SiteGroup> merge_shown(const std::vector<SiteGroup>& groups, bool all);

// The frame a person would call "where it was made": the innermost Python frame of the user's own
// code (not a library's: is_library_python_frame), else the innermost Python frame, else the
// innermost native frame that is not machinery, else the innermost frame; nullptr for an empty stack.
const Frame* user_frame(const std::vector<Frame>& stack);

// "train.py:18 in train_step" (file by its base name), "libnccl.so.2+0x1234", or "" for no stack.
std::string user_line(const std::vector<Frame>& stack);

// The library a native stack comes from: the module of its innermost frame outside vramtrace and
// the CUDA runtime/driver (e.g. "libnccl.so.2"), by base name; "" when none.
std::string stack_library(const std::vector<Frame>& stack);

}  // namespace vt::analyzer
