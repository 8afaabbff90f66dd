// Stacks in the "folded" format of flamegraph.pl, speedscope and inferno: one line per stack,
// frames outermost-first separated by ';', a space, then the bytes. Each frame is rendered by
// folded_frame(): `function (file:line)`, Python frames prefixed `py:`, inlined frames suffixed
// `_[i]` (flamegraph.pl's inline annotation), unresolved frames `?? (module+0xoffset)`. Stacks
// show the user's frames (user_frames.h: Python frames where there are any, machinery left out;
// sites that differ only in what is left out are one line); `native` keeps every frame.
#pragma once

#include <string>
#include <vector>

#include "report_model.h"

namespace vt::analyzer {

// The peak as a flame graph user means it. With PyTorch's block figures (torch.layer "on") and
// unless `driver`: the tensors at each device's allocated peak (max_memory_allocated), one line
// per user's line (the report's tensor lines, user_frames.h), its frames from the outermost down to
// that line (the call path of its biggest call site; with `native` that site's every frame), and
// `[other lines]` for the lines beyond --top, so the lines add up to PyTorch's allocated peak.
// Otherwise (or with `driver`): the driver's live set at each device's peak (for PyTorch its
// segments, by the call that made each), `[other sites]` beyond --top, adding up to the peak.
// With more than one device, every stack starts with a `[device N]` frame.
std::string folded_peak(const TraceReport& r, bool native = false, bool driver = false);

// True when folded_peak(r) gives PyTorch's tensors (its block figures were on).
bool folded_peak_is_tensors(const TraceReport& r);

// What was still allocated at the end (the leak groups, teardown excluded), with an
// `[other sites]` line for the groups beyond --top so that the lines add up to leaks.bytes.
// When the groups span more than one (bucket, device), stacks start with `[device N]`,
// `[pinned_host]`, `[managed]` or `[imported]`.
std::string folded_leaks(const TraceReport& r, bool native = false);

// One frame's text, safe for the format: ';' becomes ':', control characters (newlines, tabs)
// become spaces, and the text is never empty.
std::string folded_frame(const Frame& f);

// A stack (innermost first, as in the report) as frames outermost-first joined by ';'.
std::string folded_stack(const std::vector<Frame>& stack, bool native = false);

}  // namespace vt::analyzer
