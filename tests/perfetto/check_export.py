#!/usr/bin/env python3
"""Structural check of a `vramtrace export --perfetto` file against the Chrome trace-event format
(the JSON Perfetto and chrome://tracing import): every event well formed, every "sf" naming a
node of the top-level "stackFrames" prefix tree, every node's parent present and the tree free
of cycles, counter tracks monotonic in time, instants agreeing with otherData's policy counts,
and the file within a byte budget per trace event. With PyTorch's counters: one bytes value
each, their sample count as the policy says, and at every instant of each device (once all
its samples of that instant are read) allocated <= reserved and inactive split <= reserved -
allocated, as memory_stats() has them; tensor instants agreeing with the policy's counts; region
marks a begin or an end.

Usage: check_export.py EXPORT.json [--events N --max-bytes-per-event B]
Prints one line; exit 1 with the first problems when the file breaks a rule."""
import argparse
import json
import os
import sys

PHASES = {"M", "C", "X", "i", "I"}


def check(path, events, budget):
    problems = []
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        return ["no traceEvents array"], {}
    frames = doc.get("stackFrames")
    if not isinstance(frames, dict):
        return ["no stackFrames dictionary"], {}
    for key, node in frames.items():
        if not isinstance(node, dict) or not isinstance(node.get("name"), str) or not node["name"]:
            problems.append(f"stackFrames[{key}] has no name")
            continue
        parent = node.get("parent")
        if parent is not None and (not isinstance(parent, str) or parent not in frames):
            problems.append(f"stackFrames[{key}]: parent {parent!r} is not a node")
    # Acyclic: every chain reaches a root within len(frames) steps.
    depth_of = {}
    for key in frames:
        chain, k = [], key
        while k is not None and k not in depth_of and len(chain) <= len(frames):
            chain.append(k)
            k = frames.get(k, {}).get("parent")
        if len(chain) > len(frames):
            problems.append(f"stackFrames: a cycle through {key}")
            break
        base = depth_of.get(k, 0) if k is not None else 0
        for i, c in enumerate(reversed(chain)):
            depth_of[c] = base + i + 1
    last_ts = {}
    instants = {"allocation": 0, "oom": 0}
    counted = 0
    sf_used = 0
    tensors = tensors_counted = torch_samples = 0
    torch_now = {}  # pid -> {"allocated", "reserved", "inactive split"}: PyTorch's figures so far
    torch_open = {}  # pid -> the ts whose samples are being read (the rules hold once all are)

    def torch_rules(pid):
        f = torch_now[pid]
        a, r, i = f.get("allocated", 0), f.get("reserved", 0), f.get("inactive split", 0)
        if a > r or i > r - a:
            problems.append(f"PyTorch's figures on pid {pid} at {torch_open[pid]}: allocated {a}, reserved {r}, "
                            f"inactive split {i} (needs allocated <= reserved, inactive split <= reserved - allocated)")
    for n, e in enumerate(doc["traceEvents"]):
        if len(problems) > 20:
            break
        ph = e.get("ph")
        if ph not in PHASES:
            problems.append(f"event {n}: phase {ph!r}")
            continue
        if not isinstance(e.get("pid"), int):
            problems.append(f"event {n}: pid {e.get('pid')!r}")
        if ph != "M" and not isinstance(e.get("ts"), (int, float)):
            problems.append(f"event {n}: no ts")
        if "sf" in e:
            sf_used += 1
            if not isinstance(e["sf"], str) or e["sf"] not in frames:
                problems.append(f"event {n}: sf {e['sf']!r} is not in stackFrames")
        if "stack" in e.get("args", {}):
            problems.append(f"event {n}: a whole stack in args (stacks belong in stackFrames)")
        if ph == "C":
            track = (e["pid"], e.get("name"))
            values = e.get("args", {})
            if not values or not all(isinstance(v, int) and v >= 0 for v in values.values()):
                problems.append(f"event {n}: counter values {values!r}")
            if e["ts"] < last_ts.get(track, float("-inf")):
                problems.append(f"event {n}: counter track {track} goes back in time ({e['ts']} < {last_ts[track]})")
            last_ts[track] = e["ts"]
            if str(e.get("name", "")).startswith("PyTorch "):
                torch_samples += 1
                if list(values) != ["bytes"]:
                    problems.append(f"event {n}: PyTorch counter with values {values!r} (one 'bytes')")
                pid = e["pid"]
                if pid in torch_open and torch_open[pid] != e["ts"]:
                    torch_rules(pid)
                torch_open[pid] = e["ts"]
                torch_now.setdefault(pid, {})[e["name"][len("PyTorch "):]] = values.get("bytes", 0)
        if ph == "i" and e.get("cat") == "tensor":
            tensors += 1
            c = e.get("args", {}).get("count")
            if not isinstance(c, int) or c < 1 or "site" not in e.get("args", {}) and "sf" in e:
                problems.append(f"event {n}: tensor instant without a count or a site")
            else:
                tensors_counted += c
        if ph == "i" and e.get("cat") == "region" and e.get("args", {}).get("mark") not in ("begin", "end"):
            problems.append(f"event {n}: region mark {e.get('args')!r}")
        if ph == "i" and e.get("cat") in instants:
            instants[e["cat"]] += 1
            c = e.get("args", {}).get("count")
            if not isinstance(c, int) or c < 1:
                problems.append(f"event {n}: {e['cat']} instant without a count")
            else:
                counted += c
    for pid in torch_open:
        torch_rules(pid)
    policy = doc.get("otherData", {}).get("policy", {})
    if policy.get("pytorch_counter_samples", 0) != torch_samples:
        problems.append(f"policy.pytorch_counter_samples {policy.get('pytorch_counter_samples')} but {torch_samples} drawn")
    if policy.get("tensor_instants", 0) != tensors or tensors_counted - tensors != policy.get("tensors_merged", 0):
        problems.append(f"{tensors} tensor instants counting {tensors_counted}, policy says "
                        f"{policy.get('tensor_instants')} and {policy.get('tensors_merged')} merged")
    drawn = instants["allocation"] + instants["oom"]
    if policy.get("instants") != drawn:
        problems.append(f"otherData.policy.instants {policy.get('instants')} but {drawn} instants drawn")
    if counted - drawn != policy.get("allocations_merged"):
        problems.append(f"counts add up to {counted - drawn} merged, policy says {policy.get('allocations_merged')}")
    if policy.get("stack_frames") != len(frames):
        problems.append(f"policy.stack_frames {policy.get('stack_frames')} but {len(frames)} nodes")
    size = os.path.getsize(path)
    if events and size > budget * events:
        problems.append(f"{size} bytes for {events} events: {size / events:.2f} B/event, budget {budget}")
    stats = {"bytes": size, "events": len(doc["traceEvents"]), "frames": len(frames), "sf": sf_used,
             "instants": drawn, "counters": len(last_ts), "max_depth": max(depth_of.values(), default=0),
             "pytorch_samples": torch_samples, "tensors": tensors}
    return problems, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("export")
    ap.add_argument("--events", type=int, default=0)
    ap.add_argument("--max-bytes-per-event", type=float, default=5.0)
    ap.add_argument("--expect-stacks", action="store_true", help="fail when no event points into stackFrames")
    a = ap.parse_args()
    problems, stats = check(a.export, a.events, a.max_bytes_per_event)
    if a.expect_stacks and not problems and (stats["sf"] == 0 or stats["frames"] == 0):
        problems.append("no event has a stack (sf)")
    if problems:
        print("check_export: FAILED: " + "; ".join(problems[:10]))
        return 1
    print("check_export: ok " + json.dumps(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
