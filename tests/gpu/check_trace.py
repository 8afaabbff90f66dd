"""Checks a run's traces: python3 check_trace.py VRAMTRACE DIR NAME [op>=N ...] [failed>=N].
Each condition is `op` (or `failed`, or `any:op1|op2`) followed by >=N or ==N. Prints one PASS or
FAIL line for NAME; exits 1 on failure."""
import json
import os
import re
import subprocess
import sys

vt, d, name, conds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
counts = {}
failed = 0
for f in sorted(os.listdir(d)):
    out = subprocess.run([vt, "dump", os.path.join(d, f)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        e = json.loads(line)
        counts[e["op"]] = counts.get(e["op"], 0) + 1
        if e["result"] != 0:
            failed += 1
            if "free_bytes" not in e or "total_bytes" not in e:
                print(f"FAIL {name}: failure without free/total: {line}")
                sys.exit(1)
ok = True
for c in conds:
    key, op, n = re.match(r"(.+?)(>=|==)(\d+)$", c).groups()
    if key == "failed":
        have = failed
    elif key.startswith("any:"):
        have = sum(counts.get(k, 0) for k in key[4:].split("|"))
    else:
        have = counts.get(key, 0)
    good = have >= int(n) if op == ">=" else have == int(n)
    ok &= good
    if not good:
        print(f"  {name}: {key} is {have}, wanted {op}{n}")
print(("PASS " if ok else "FAIL ") + name + " " + json.dumps(counts, sort_keys=True) + f" failed={failed}")
sys.exit(0 if ok else 1)
