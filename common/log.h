// One-line messages to stderr, prefixed "vramtrace: ". Uses a stack buffer and write(2): safe
// from any hook, never allocates, never touches stdio state the traced program owns.
//
// "stderr" means the file that was descriptor 2 when the library was loaded: a program that has
// since closed descriptor 2 and opened one of its own files there (a data file, a socket) does
// not get our line in its data; the line is then dropped. The write never raises a signal in the
// program (SIGPIPE on a pipe without reader, SIGTTOU; see own_work.h), never blocks on a full
// pipe, and is no cancellation point.
//
// log_line_once_per_run: the same, but a line already said by another process of the same
// `vramtrace run` (a forked or exec'ed child, another rank) is not said again. `run` makes a
// private directory, kOnceDirPattern with its session id (VRAMTRACE_SESSION), and removes it
// when the command ends; each distinct line claims a file there (O_EXCL). Without that
// directory (LD_PRELOAD alone) every process says its line.
#pragma once

namespace vt {
void log_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_line_once_per_run(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

inline constexpr char kOnceDirPattern[] = "/dev/shm/.vramtrace-run.%s";  // %s: the session id

// A sentence for `vramtrace run` to say when the command has ended and no trace was written (a
// library opened out of the hooks' reach): a file kRunNotePrefix* in that directory holding it,
// once per distinct text. Without the directory (LD_PRELOAD alone), nothing.
inline constexpr char kRunNotePrefix[] = "note.";
void leave_run_note(const char* text);
}
