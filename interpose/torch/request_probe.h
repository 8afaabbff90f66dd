// The size a PyTorch program asked for, beside the block its caching allocator handed out.
// c10::reportMemoryUsageToProfiler (torch_hooks.cpp) is given the block alone: its size is the
// request rounded (512 B, roundup_power2_divisions), or a whole free block PyTorch did not split.
// PyTorch's own recorder and `vramtrace whatif` need the request itself.
//
// Where it is seen: every tensor allocation calls the allocator object's virtual `allocate(n)`
// (c10::Allocator's first entry after the destructors; the object is the one
// c10::cuda::CUDACachingAllocator::allocator points to, exported by libc10_cuda.so). The probe
// gives that object a copy of its virtual table whose `allocate` entry is a trampoline: it notes
// `n` for the calling thread (one thread-local word) and jumps to the real function with every
// register as it came, so whatever the entry turns out to be, the call is unchanged. The block
// hook then takes the note (take_request) on the same thread, under the same allocator call.
//
// Installed once (torch_hooks.h: at CUDA's first driver lookup when PyTorch is loaded by then,
// which PyTorch's CUDA initialization makes before its first tensor; else from the block layer's
// first call, too late for that block), on x86-64 only,
// when: the symbol is found outside libvramtrace.so; the object holds a virtual table inside the
// same library; the table's entries can be counted (code pointers, up to 256); the object is not
// in read-only memory. Otherwise nothing is changed and blocks keep their rounded size alone.
// VRAMTRACE_TORCH_REQUESTS=0 turns it off.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt {

// c10::cuda::CUDACachingAllocator::allocator: the object the probe is installed on.
inline constexpr const char* kTorchAllocatorSymbol = "_ZN3c104cuda20CUDACachingAllocator9allocatorE";

// Once; `skip` is an address inside libvramtrace.so (find_loaded_symbol's). *why gets a short
// reason when it is not installed, or "" when it is. Not thread-safe: the caller runs it once.
bool install_request_probe(const void* skip, char* why, size_t why_size);

// The size the calling thread last asked allocate() for, and forgets it (0: none since).
uint64_t take_request();

}  // namespace vt
