// Which frames of a stack are the user's: Python frames first where there are any; the
// interpreter's own machinery (_PyEval_*, _PyObject_*, ctypes/libffi, pybind11 dispatch, torch's
// C++ dispatcher), libc's start-up frames and vramtrace's own are machinery. One rule for every
// output that shows a stack (text, HTML, folded, diff) and for the lines remedies name.
#pragma once

#include <string>
#include <vector>

#include "symbolizer.h"

namespace vt::analyzer {

// True for a frame of the machinery between the user's code and the allocation.
bool is_machinery_frame(const Frame& f);

// The frame a person would call "where it was made": the innermost Python frame, else the
// innermost native frame that is not machinery, else the innermost frame; nullptr for an empty stack.
const Frame* user_frame(const std::vector<Frame>& stack);

// "train.py:18 in train_step" (file by its base name), "libnccl.so.2+0x1234", or "" for no stack.
std::string user_line(const std::vector<Frame>& stack);

// The library a native stack comes from: the module of its innermost frame outside vramtrace and
// the CUDA runtime/driver (e.g. "libnccl.so.2"), by base name; "" when none.
std::string stack_library(const std::vector<Frame>& stack);

}  // namespace vt::analyzer
