"""python3 check_lines.py VRAMTRACE TRACE_DIR FILE:LINE -- some allocation event's stack has the
Python frame FILE:LINE (the allocation attributed to the line of the script that made it)."""
import json
import os
import subprocess
import sys

vt, d, want = sys.argv[1:4]
file, line = want.rsplit(":", 1)
for f in sorted(os.listdir(d)):
    out = subprocess.run([vt, "dump", os.path.join(d, f)], capture_output=True, text=True).stdout
    for l in out.splitlines():
        e = json.loads(l)
        for fr in e.get("stack", []):
            if fr["python"] and fr["file"] == file and str(fr["line"]) == line:
                print(f"PASS {e['op']} of {e.get('size')} bytes attributed to {want}")
                sys.exit(0)
print(f"FAIL no event attributed to {want}")
sys.exit(1)
