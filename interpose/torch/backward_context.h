// The Python frames lent to PyTorch's autograd workers. loss.backward() (and autograd.grad) enter
// torch's autograd engine on the calling thread, which then waits, GIL released, while one worker
// thread per device (pt_autograd_N: a Python thread state, no Python frames) makes every gradient
// and backward temporary. Their events would name no Python line, and an OOM in backward none of
// the user's. The engine hook (autograd_engine_hook.cpp) publishes the calling thread's Python
// frames as it enters the engine and takes them back as it leaves: by returning, or unwound by an
// exception or a cancellation (its personality routine). capture_stack lends them (through the frame
// borrower this file registers) to a thread with
// a thread state and no frames of its own while exactly one thread is inside the engine; with two
// (backward run concurrently from two threads) a worker's event could be for either: it gets none.
// Owns the publications: one slot per publishing thread, each a sequence lock with that thread as
// its only writer; readers never wait and read no other thread's memory.
#pragma once

#include <cstdint>

namespace vt {

// The calling thread enters the engine: its frames are published (a nested call's, on the same
// thread, replace its caller's until it leaves).
void backward_enter();
// The calling thread leaves the engine (returned or unwound): what it published before is back,
// or nothing once it left the outermost call. Pairs with backward_enter on the same thread.
void backward_leave();

// The first backward_enter registers this file's frame borrower with stack_capture.h
// (set_frame_borrower): on a thread with a Python thread state and no frames, the frames of the one
// thread inside the engine (walker keys, innermost first), or none (none, or more than one thread).

// After fork: only the forking thread exists, and it is in no engine call of the child's.
void forget_backward_context();

}  // namespace vt
