#!/usr/bin/env python3
"""The one reader of `normtune bench --json` files (one JSON object per line: a header with the
copy bandwidth, then one result per shape), for compare_peer.py, ab_builds.sh, env_sweep.sh and
explore/session50/arms.sh.

usage: bench_json.py ab OUT ROUNDS          the table of scripts/ab_builds.sh from
                                            OUT/base-N.json and OUT/head-N.json, N = 1..ROUNDS
       bench_json.py sweep OUT VAR VALUE... the table of scripts/env_sweep.sh from
                                            OUT/bench-VALUE.json
       bench_json.py arms OUT ROUNDS NAME...
                                            the table of scripts/explore/session50/arms.sh
                                            from OUT/bench-NAME-N.json, N = 1..ROUNDS
"""
import json
import math
import os
import statistics
import sys


def read_lines(path, who="bench_json"):
    """The JSON objects of a file of one object per line; other lines are reported and skipped."""
    objects = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                objects.append(json.loads(line))
            except json.JSONDecodeError as e:
                print(f"{who}: {path}:{number}: not JSON ({e}): skipped", file=sys.stderr)
    return objects


def bench_file(path, who="bench_json"):
    """(header, results) of a normtune bench --json file: the header object ({} if none) and
    the objects of one shape each (with op, rows and cols)."""
    header, results = {}, []
    for obj in read_lines(path, who):
        if "header" in obj:
            header = obj
        elif "op" in obj and "rows" in obj and "cols" in obj:
            results.append(obj)
    return header, results


def shape_key(r):
    """A result's shape: (op, dtype, rows, cols)."""
    return (r["op"], r["dtype"], int(r["rows"]), int(r["cols"]))


def check_of(r):
    """A result's verdict: its check (bench), else its outcome."""
    return r.get("check", r.get("outcome", ""))


def geomean(values):
    """The geometric mean of the positive finite values; None when there are none."""
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def ab_table(out, rounds):
    """Markdown: per shape the median time per call of each tree over the rounds, their ratio
    (base / this: above 1, this tree is faster), and per op and dtype the geometric mean."""
    runs = {"base": {}, "head": {}}
    copy = {"base": [], "head": []}
    for side in runs:
        for i in range(1, rounds + 1):
            path = os.path.join(out, "%s-%d.json" % (side, i))
            if not os.path.exists(path):
                continue
            header, results = bench_file(path, "ab_builds")
            if header.get("copy_gbps") is not None:
                copy[side].append(header["copy_gbps"])
            for r in results:
                if r.get("us") is not None:
                    runs[side].setdefault(shape_key(r), []).append((r["us"], check_of(r)))
    lines = ["copy GB/s per round: base %s, this tree %s" % (copy["base"], copy["head"]), "",
             "| op | dtype | rows x cols | base us | this tree us | base / this | checks |",
             "| --- | --- | --- | ---: | ---: | ---: | --- |"]
    ratios = {}
    for key in sorted(set(runs["base"]) | set(runs["head"])):
        b, h = runs["base"].get(key, []), runs["head"].get(key, [])
        shape = "| %s | %s | %d x %d |" % key
        if not b or not h:
            lines.append("%s %s | %s | - | missing |" % (
                shape, "-" if not b else "%.2f" % statistics.median(u for u, _ in b),
                "-" if not h else "%.2f" % statistics.median(u for u, _ in h)))
            continue
        mb, mh = statistics.median(u for u, _ in b), statistics.median(u for u, _ in h)
        checks = sorted(set(c for _, c in b + h))
        ratios.setdefault(key[:2], []).append(mb / mh)
        lines.append("%s %.2f | %.2f | %.3f | %s |" % (shape, mb, mh, mb / mh, ",".join(checks)))
    lines += ["", "| op | dtype | shapes | geometric mean base / this | min | max |",
              "| --- | --- | ---: | ---: | ---: | ---: |"]
    for k in sorted(ratios):
        r = ratios[k]
        lines.append("| %s | %s | %d | %.3f | %.3f | %.3f |" % (k[0], k[1], len(r), geomean(r),
                                                                min(r), max(r)))
    return "\n".join(lines)


def sweep_table(out, var, values):
    """Markdown: per shape the time per call and GB/s under each value of the variable."""
    rows, copy = {}, {}
    for v in values:
        path = os.path.join(out, "bench-%s.json" % v)
        if not os.path.exists(path):
            continue
        header, results = bench_file(path, "env_sweep")
        copy[v] = header.get("copy_gbps")
        for r in results:
            rows.setdefault(shape_key(r), {})[v] = r
    lines = ["%s sweep; copy GB/s per value: %s" % (
                 var, ", ".join("%s %s" % (v, copy.get(v)) for v in values)), "",
             "| op | dtype | rows x cols | " +
             " | ".join("%s=%s us (GB/s)" % (var, v) for v in values) + " |",
             "| --- | --- | --- |" + " ---: |" * len(values)]
    for key in sorted(rows):
        cells = []
        for v in values:
            r = rows[key].get(v)
            if not r:
                cells.append("—")
                continue
            ok = check_of(r)
            cells.append("%s (%s) %s" % (r.get("us", r.get("median_us")), r.get("gbps"),
                                         "" if ok in ("pass", "ok") else ok))
        lines.append("| %s | %s | %d x %d | %s |" % (key + (" | ".join(cells),)))
    return "\n".join(lines)


def arms_table(out, rounds, names):
    """Markdown: per shape each build's median time per call over the rounds and its ratio to the
    first's (first / arm: above 1, the arm is faster), the checks that did not pass, and per op
    and dtype the geometric mean of each ratio."""
    times, failed = {}, {}
    for n in names:
        for i in range(1, rounds + 1):
            path = os.path.join(out, "bench-%s-%d.json" % (n, i))
            if not os.path.exists(path):
                continue
            for r in bench_file(path, "arms")[1]:
                if r.get("us") is None:
                    continue
                times.setdefault(shape_key(r), {}).setdefault(n, []).append(r["us"])
                if check_of(r) not in ("pass", "ok"):
                    failed.setdefault(shape_key(r), []).append("%s %s" % (n, check_of(r)))
    first, rest = names[0], names[1:]
    lines = ["| op | dtype | rows x cols | " + " | ".join("%s us" % n for n in names) + " | " +
             " | ".join("%s/%s" % (first, n) for n in rest) + " | checks |",
             "| --- | --- | --- |" + " ---: |" * (2 * len(names) - 1) + " --- |"]
    ratios = {}
    for key in sorted(times):
        med = {n: statistics.median(v) for n, v in times[key].items()}
        cells = ["%.2f" % med[n] if n in med else "-" for n in names]
        cols = []
        for n in rest:
            if n in med and first in med:
                ratios.setdefault(key[:2], {}).setdefault(n, []).append(med[first] / med[n])
                cols.append("%.3f" % (med[first] / med[n]))
            else:
                cols.append("-")
        lines.append("| %s | %s | %d x %d | " % key + " | ".join(cells + cols) + " | %s |" %
                     (", ".join(failed.get(key, [])) or "pass"))
    means = " | ".join("geometric mean %s/%s" % (first, n) for n in rest)
    lines += ["", "| op | dtype | %s |" % means, "| --- | --- |" + " ---: |" * len(rest)]
    for k in sorted(ratios):
        g = [geomean(ratios[k].get(n, [])) for n in rest]
        lines.append("| %s | %s | " % k + " | ".join("-" if v is None else "%.3f" % v for v in g)
                     + " |")
    return "\n".join(lines)


def main(argv):
    if len(argv) == 3 and argv[0] == "ab":
        print(ab_table(argv[1], int(argv[2])))
        return 0
    if len(argv) >= 4 and argv[0] == "arms":
        print(arms_table(argv[1], int(argv[2]), argv[3:]))
        return 0
    if len(argv) >= 4 and argv[0] == "sweep":
        print(sweep_table(argv[1], argv[2], argv[3:]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
