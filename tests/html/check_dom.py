#!/usr/bin/env python3
"""Checks a report page's DOM as Chromium dumped it after the script ran (tests/html/browser_test.sh).

Usage: check_dom.py trace|job|torch DOM_FILE [HOSTILE_TEXT]
Prints one problem per line and exits 1 when any: the script did not finish (data-vt-status),
tests/html/interact.js did not run or reported a failure (data-vt-interact), a section is missing or
empty (the OOM bar's first-context note included), an element came from trace text (an <img>, an on* attribute), or HOSTILE_TEXT (trace
text that holds markup) is not shown as plain text.
"""
import re
import sys
from html.parser import HTMLParser


class Dom(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []  # (tag, attrs dict)
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def main():
    kind, path = sys.argv[1], sys.argv[2]
    hostile = sys.argv[3] if len(sys.argv) > 3 else None
    dom = Dom()
    raw = open(path, encoding="utf-8", errors="replace").read()
    dom.feed(raw)
    problems = []

    def having(tag=None, cls=None, id=None):
        out = []
        for t, a in dom.tags:
            if tag and t != tag:
                continue
            if cls and cls not in (a.get("class") or "").split():
                continue
            if id and a.get("id") != id:
                continue
            out.append(a)
        return out

    def need(what, n, at_least=1):
        if n < at_least:
            problems.append(f"{what}: found {n}, expected at least {at_least}")

    body = having("body")
    status = body[0].get("data-vt-status") if body else None
    if status != "ok":
        problems.append(f"the script did not finish: data-vt-status={status!r}")
    interact = body[0].get("data-vt-interact") if body else None
    if kind == "torch":  # a PyTorch trace (no interaction script): its own section, the frames switch
        interact = "ok"
        need("the PyTorch section", len([a for t, a in dom.tags if t == "section" and a.get("id") == "torch-0"]))
        need("tensor timeline areas", len([a for a in having("path") if a.get("fill") and len(a.get("d") or "") > 40]), 2)
        need("PyTorch's OOM message", len(having("div", "torch-msg")))
        need("the frames switch", len(having("span", "frames-switch")))
        need("folded frames in stacks", len(having("li", "folded")), 5)
        need("fold markers", len(having("li", "fold-marker")))
        if "torch_workload.py:" not in "".join(dom.text):
            problems.append("no Python line of the workload is shown")
    if interact != "ok":
        problems.append(f"interaction (tests/html/interact.js): {interact or 'did not run'}")
    errors = having(id="vt-errors")
    if errors and "hidden" not in errors[0]:
        shown = re.search(r'<pre id="vt-errors"[^>]*>(.*?)</pre>', raw, re.S)
        problems.append("the page shows script errors: " + (shown.group(1).strip()[:500] if shown else "?"))
    need("trace headers", len(having("header", "trace-header")))
    need("timeline charts with a drawn series",
         len([a for a in having("path", "area-device") if len(a.get("d") or "") > 10]))
    need("icicle nodes", len(having("g", "node")), 3 if kind != "torch" else 1)
    need("group tables", len(having("table", "groups")), 2)
    need("OOM cards", len(having("details", "oom")))
    need("verdicts", len(having("span", "verdict-code")))
    if kind != "torch":  # (the PyTorch page's device has no context cost)
        # The OOM of oom_scenarios leak (no NVML): its first context's cost, measured only after
        # it was made, is shown inside "elsewhere" as possibly this process's (split_unattributed).
        note = (r'<span class="key part-key p-others">elsewhere \(other processes, driver; up to [^<]* of it may be '
                r"this process's first context, measured only after it was made\)")
        need("the OOM bar's note on the first context", len(re.findall(note, raw)))
    for sec in ("timeline-", "peak-", "leaks-", "oom-", "frag-"):
        need(f"section {sec}*", len([a for t, a in dom.tags if t == "section" and (a.get("id") or "").startswith(sec)]))
    if kind == "job":
        need("rank rows", len(having("tr", "clickable")), 2)
        need("a selected rank", len(having("tr", "selected")))
    # Trace text must stay text: no element or handler can come from it.
    if having("img"):
        problems.append("an <img> element exists (trace text was parsed as markup)")
    for t, a in dom.tags:
        for k in a:
            if k.startswith("on"):
                problems.append(f"<{t}> has an event handler attribute {k}")
    if hostile and hostile not in "".join(dom.text):
        problems.append("the hostile argument is not shown as text")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
