// One-line messages to stderr, prefixed "vramtrace: ". Uses a stack buffer and write(2): safe
// from any hook, never allocates, never touches stdio state the traced program owns.
#pragma once

namespace vt {
void log_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
}
