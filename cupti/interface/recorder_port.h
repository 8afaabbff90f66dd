// What the kernel recorder (cupti/) needs from the trace recorder it runs inside: four calls,
// implemented by interpose/ (cupti_port.cpp). cupti/ includes nothing else of interpose/, and
// interpose/ sees only this folder of cupti/ (activity_recorder.h is the other direction).
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt::cupti::port {

// Appends one metadata record (tag, payload) stamped `t` (CLOCK_MONOTONIC ns) to the calling
// thread's chunk of the trace. False when nothing was written (tracing stopped).
bool write_record(uint8_t tag, const uint8_t* payload, size_t len, uint64_t t);

// The trace's FileHeader::start_monotonic_ns: activity times are written relative to it. Valid
// once start() has been called (the trace is open then).
uint64_t trace_start_ns();

// glibc's dlsym: a plain dlsym from inside libvramtrace would reach its own exported stub.
void* real_dlsym(void* handle, const char* name);

// cuDriverGetVersion of the driver the process loaded (e.g. 13000), 0 when there is none yet.
int driver_version();

}  // namespace vt::cupti::port
