// `vramtrace top`'s interactive view: what is on the screen and what the keys do, apart from
// the terminal (terminal.h), so it can be driven with a snapshot and keys alone.
//
// Screen: a header (time, refresh, sort, keys), each GPU (used/total, free, a bar, its
// processes), then the traced processes as a table (pid, live, peak, pinned host, managed, trace)
// and under each its call-site tree: the stacks holding the most device memory right now, merged
// from the outermost frame inwards; a node's bytes are those of the sites below it, a chain of
// frames without a branch is one row. Keys: up/down (k/j) select, right/Enter open, left close
// (or go to the parent), s cycles the sort (live, peak, pid), p pauses, q quits.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "../top_snapshot.h"

namespace vt::tui {

class TopScreen {
 public:
  enum class Sort { Live, Peak, Pid };
  enum class Action { None, Redraw, Refresh, Quit };

  explicit TopScreen(double interval_s) : interval_s_(interval_s) {}

  // The frame for `snap` in a width x height terminal: exactly `height` lines, each fitted to
  // `width` columns, the selected row in reverse video.
  std::string render(const cli::TopSnapshot& snap, int width, int height);
  // What a key does; rows are those of the last render.
  Action key(int k);

  bool paused() const { return paused_; }
  Sort sort() const { return sort_; }

  struct Row {
    std::string key;   // stable across refreshes: "p<pid>" / "p<pid>/<frame>/<frame>..."
    std::string parent;
    int depth = 0;
    std::string text;
    bool openable = false, open = false;
  };
  // The rows of the process table and trees for `snap`, in screen order (for tests too).
  std::vector<Row> rows(const cli::TopSnapshot& snap) const;

 private:
  bool is_open(const std::string& key, int depth) const;

  double interval_s_;
  Sort sort_ = Sort::Live;
  bool paused_ = false;
  std::string selected_;  // a row key
  std::set<std::string> opened_, closed_;  // the user's choices over the defaults
  std::vector<Row> last_rows_;
  int page_ = 10;   // rows per page at the last render
  size_t top_ = 0;  // first table row shown
};

}  // namespace vt::tui
