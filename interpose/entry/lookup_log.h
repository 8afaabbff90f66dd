// VRAMTRACE_DEBUG_LOOKUPS=PATH: one line per cuGetProcAddress request, saying what the caller
// finally received ("name version flags result -> module symbol"). A diagnostic for "why was this
// allocation not seen" and the proof, in tests, that cudart is handed our hooks. Off by default;
// when off it costs one relaxed load per lookup (lookups are not a hot path anyway).
#pragma once

#include <cstdint>

namespace vt {
void log_lookup(const char* symbol, int version, uint64_t flags, int result, void* returned);
void forget_lookup_log_lock();  // after fork, in the child (its holder may have been another thread)
}
