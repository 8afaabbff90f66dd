// The Python frames lent to PyTorch's autograd workers. loss.backward() (and autograd.grad) enter
// torch's autograd engine on the calling thread, which then waits, GIL released, while one worker
// thread per device (pt_autograd_N: a Python thread state, no Python frames) makes every gradient
// and backward temporary. Their events would name no Python line, and an OOM in backward none of
// the user's. The engine hook (autograd_engine_hook.cpp) publishes the main thread's Python frames
// as it enters the engine and takes them back as it leaves (returns or unwinds); capture_stack
// lends them to a thread with a thread state and no frames of its own while the main thread's
// innermost frame is still the one published. Only the main thread publishes (its thread state
// lives as long as the interpreter: the check reads it); a backward run from another thread lends
// nothing. Owns the published copy (a sequence lock: one writer, readers never wait).
#pragma once

#include <cstdint>

namespace vt {

// The main thread enters the engine: its frames are published (what was published before, a
// nested call's caller, is kept to be put back). Other threads: nothing.
void backward_enter();
// The main thread leaves the engine (returned or unwound by an exception): the previous
// publication is back. Must pair with backward_enter on the same thread.
void backward_leave();

// Whether anything is published: one relaxed load (capture_stack asks when a thread has no frames).
bool backward_frames_published();
// On a thread with a Python thread state and no frames: the published frames (walker keys,
// innermost first) into out[0..max), or 0 when nothing valid is published for this trace.
int borrow_backward_frames(uint64_t* out, int max);

// After fork: the child's main thread is not the parent's.
void forget_backward_context();

}  // namespace vt
