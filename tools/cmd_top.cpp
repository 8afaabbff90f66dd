// `vramtrace top [--interval S] [--once]`: each GPU's memory (total, per process, free) from
// NVML, and for processes traced by vramtrace their live bytes by kind and their top call sites
// right now (tools/top_snapshot.h). On a terminal, an interactive view that refreshes in place
// (tools/tui/: sortable, a call-site tree per process); on a pipe, or with --once, the text form
// (one snapshot with --once, one per interval otherwise). Every string shown is escaped.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>
#include "usage.h"
#include "commands.h"
#include "top_snapshot.h"
#include "tui/terminal.h"
#include "tui/top_screen.h"

namespace vt::cli {

namespace {

int interactive(TopSource& source, double interval) {
  tui::Terminal term;
  if (!term.ok()) return -1;
  tui::TopScreen screen(interval);
  TopSnapshot snap = source.take();
  auto next = std::chrono::steady_clock::now() + std::chrono::duration<double>(interval);
  for (bool redraw = true;;) {
    if (redraw) {
      int w, h;
      term.size(&w, &h);
      term.draw(screen.render(snap, w, h));
      redraw = false;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - std::chrono::steady_clock::now()).count();
    int k = term.read_key(screen.paused() ? 1000 : int(std::max<long long>(0, left)));
    tui::TopScreen::Action a = k == tui::kNone ? tui::TopScreen::Action::None : screen.key(k);
    if (a == tui::TopScreen::Action::Quit) return 0;
    bool due = !screen.paused() && std::chrono::steady_clock::now() >= next;
    if (a == tui::TopScreen::Action::Refresh || due) {
      snap = source.take();
      next = std::chrono::steady_clock::now() + std::chrono::duration<double>(interval);
      redraw = true;
    }
    if (a == tui::TopScreen::Action::Redraw) redraw = true;
  }
}

}  // namespace

int top_command(double interval, bool once) {
  if (interval < 0.1 || interval > 3600) {
    error_line("--interval must be between 0.1 and 3600 seconds");
    return 2;
  }
  TopSource source;
  if (!once && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO)) {
    int rc = interactive(source, interval);
    if (rc >= 0) return rc;
  }
  for (;;) {
    std::cout << top_text(source.take()) << std::flush;
    if (once) return 0;
    std::cout << "\n";
    std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  }
}

void add_top_command(CLI::App& app, Commands& out) {
  struct Options {
    double interval = 1.0;
    bool once = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("top", "live GPU memory per process, and the call sites of traced processes");
  c->add_option("--interval", o->interval, "seconds between refreshes")->capture_default_str()->check(finite_in(0.1, 3600));
  c->add_flag("--once", o->once, "print one snapshot and exit");
  out.push_back({c, [o](const Invocation&) { return top_command(o->interval, o->once); }});
}

}  // namespace vt::cli
