// The terminal for `vramtrace top`'s interactive view, with plain VT100/xterm sequences (no
// curses: the CLI depends on nothing but the C library). Terminal owns the terminal's state
// while the view runs: raw keys without echo, the alternate screen, a hidden cursor; all three
// are restored when it is destroyed, on SIGINT/SIGTERM/SIGHUP (which end the view), and around
// Ctrl-Z (stopped and resumed in the state the shell expects).
#pragma once

#include <string>

namespace vt::tui {

enum Key : int {
  kNone = -1,     // nothing within the timeout
  kResize = -2,   // the window changed size: redraw
  kQuit = -3,     // a signal asked us to end
  kUp = 0x100, kDown, kLeft, kRight, kPageUp, kPageDown, kHome, kEnd, kEnter,
};

class Terminal {
 public:
  Terminal();  // enters the view; ok() false when stdin/stdout are not a terminal
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;
  bool ok() const { return ok_; }

  // The next key within timeout_ms (a printable character as itself, or a Key).
  int read_key(int timeout_ms);
  void size(int* width, int* height) const;
  // Replaces the screen with `frame` (lines already fitted to the width, may hold SGR sequences).
  void draw(const std::string& frame);

 private:
  bool ok_ = false;
};

}  // namespace vt::tui
