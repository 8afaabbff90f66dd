"""The pytest plugin's byte sizes (pytest_plugin/pytest_vramtrace/sizes.py) on the shared cases
(tests/shared/byte_sizes.json), which the CLI's and the HTML page's formatters pass too.
Usage: python3 byte_sizes_test.py [CASES_JSON]. Exit 0 when every case matches."""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "pytest_plugin", "pytest_vramtrace"))
import sizes  # noqa: E402  (the module alone: it does not import pytest)

cases = json.load(open(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "byte_sizes.json")))
failed = 0
for text_bytes, want in cases["format"]:
    got = sizes.format_bytes(int(text_bytes))
    if got != want:
        print(f"FAIL format_bytes({text_bytes}) = {got!r}, want {want!r}")
        failed += 1
for text, want in cases["parse"]:
    try:
        got = str(sizes.parse_bytes(text))
    except ValueError:
        got = None
    if got != want:
        print(f"FAIL parse_bytes({text!r}) = {got}, want {want}")
        failed += 1
if len(cases["format"]) < 10 or len(cases["parse"]) < 10:
    print("FAIL: too few cases read")
    failed += 1
print(f"{failed} failures" if failed else f"PASS {len(cases['format']) + len(cases['parse'])} byte-size cases (sizes.py)")
sys.exit(1 if failed else 0)
