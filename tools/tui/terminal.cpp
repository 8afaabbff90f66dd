// See terminal.h.
#include "terminal.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vt::tui {

namespace {

termios g_saved;
bool g_active = false;
volatile sig_atomic_t g_resized = 0, g_quit = 0;
constexpr char kEnterView[] = "\033[?1049h\033[?25l";  // alternate screen, cursor hidden
constexpr char kLeaveView[] = "\033[?25h\033[?1049l";

void put(const char* s, size_t n) {
  while (n > 0) {
    ssize_t w = write(STDOUT_FILENO, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= size_t(w);
  }
}

void raw_on() {
  termios t = g_saved;
  t.c_lflag &= ~(ICANON | ECHO);  // ISIG stays: Ctrl-C and Ctrl-Z still raise their signals
  t.c_iflag &= ~(IXON | ICRNL);
  t.c_cc[VMIN] = 0;
  t.c_cc[VTIME] = 0;
  tcsetattr(STDIN_FILENO, TCSANOW, &t);
  put(kEnterView, sizeof kEnterView - 1);
}

// Both async-signal-safe (tcsetattr and write are).
void raw_off() {
  put(kLeaveView, sizeof kLeaveView - 1);
  tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
}

void on_quit(int) { g_quit = 1; }
void on_winch(int) { g_resized = 1; }
void on_cont(int);

void on_tstp(int) {
  int saved = errno;
  raw_off();
  signal(SIGTSTP, SIG_DFL);
  raise(SIGTSTP);  // stops here until SIGCONT
  errno = saved;
}

void on_cont(int) {
  int saved = errno;
  if (g_active) {
    raw_on();
    signal(SIGTSTP, on_tstp);
    g_resized = 1;  // redraw everything
  }
  errno = saved;
}

void handle(int sig, void (*fn)(int)) {
  struct sigaction sa {};
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

}  // namespace

Terminal::Terminal() {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) || tcgetattr(STDIN_FILENO, &g_saved) != 0) return;
  handle(SIGINT, on_quit);
  handle(SIGTERM, on_quit);
  handle(SIGHUP, on_quit);
  handle(SIGWINCH, on_winch);
  handle(SIGTSTP, on_tstp);
  handle(SIGCONT, on_cont);
  raw_on();
  g_active = true;
  ok_ = true;
}

Terminal::~Terminal() {
  if (!ok_) return;
  g_active = false;
  raw_off();
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGCONT}) signal(s, SIG_DFL);
}

void Terminal::size(int* width, int* height) const {
  winsize ws {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    *width = ws.ws_col;
    *height = ws.ws_row;
  } else {
    *width = 80;
    *height = 24;
  }
}

void Terminal::draw(const std::string& frame) {
  std::string out = "\033[H" + frame + "\033[J";
  put(out.data(), out.size());
}

namespace {

// Bytes read but not yet parsed: a paste, or keys typed faster than we draw, arrive together.
unsigned char g_input[64];
size_t g_have = 0;

// One key from the front of g_input, consumed; kNone when what is there is not a whole key yet.
int take_key() {
  if (g_have == 0) return kNone;
  size_t used = 1;
  int key = g_input[0];
  if (key == '\r' || key == '\n') key = kEnter;
  if (g_input[0] == 0x1b && g_have >= 3 && (g_input[1] == '[' || g_input[1] == 'O')) {
    used = 3;
    switch (g_input[2]) {
      case 'A': key = kUp; break;
      case 'B': key = kDown; break;
      case 'C': key = kRight; break;
      case 'D': key = kLeft; break;
      case 'H': key = kHome; break;
      case 'F': key = kEnd; break;
      default:
        key = kNone;
        if (g_have >= 4 && g_input[3] == '~') {
          used = 4;
          switch (g_input[2]) {
            case '1': case '7': key = kHome; break;
            case '4': case '8': key = kEnd; break;
            case '5': key = kPageUp; break;
            case '6': key = kPageDown; break;
          }
        }
    }
  } else if (g_input[0] == 0x1b && g_have >= 2 && (g_input[1] == '[' || g_input[1] == 'O')) {
    return kNone;  // the rest of the sequence is on its way
  }
  memmove(g_input, g_input + used, g_have - used);
  g_have -= used;
  return key;
}

}  // namespace

int Terminal::read_key(int timeout_ms) {
  for (;;) {
    if (g_quit) return kQuit;
    if (g_resized) {
      g_resized = 0;
      return kResize;
    }
    size_t before = g_have;
    int k = take_key();
    if (k != kNone || g_have != before) return k;  // a key, or junk consumed (kNone)
    pollfd p = {STDIN_FILENO, POLLIN, 0};
    int n = poll(&p, 1, g_have ? 50 : timeout_ms);  // an escape sequence's rest comes at once
    if (g_quit) return kQuit;
    if (n <= 0) {
      if (g_have) {  // a lone ESC, or a cut sequence: drop it
        g_have = 0;
        return 0x1b;
      }
      return kNone;
    }
    ssize_t got = read(STDIN_FILENO, g_input + g_have, sizeof g_input - g_have);
    if (got == 0) return kQuit;  // the terminal went away
    if (got > 0) g_have += size_t(got);
    if (g_have == sizeof g_input && take_key() == kNone) g_have = 0;  // junk filling the buffer
  }
}

}  // namespace vt::tui
