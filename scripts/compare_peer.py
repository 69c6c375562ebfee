#!/usr/bin/env python3
"""clnorm next to PyTorch: `normtune bench --grid ... --json` against peer_torch.py's output.

usage: compare_peer.py CLNORM_JSON [TORCH_JSON] [--out COMBINED_JSON]

Prints a markdown table, one row per op, dtype and shape of the clnorm run: clnorm's GB/s and
its ratio to the copy bandwidth measured in the same normtune run, PyTorch eager's and
torch.compile's GB/s, clnorm against each (their kernel time over clnorm's: above 1, clnorm is
faster), and clnorm's correctness check; then the geometric means of those ratios per op and
dtype, over the shapes that passed the check and have both figures.

Every GB/s column uses clnorm's byte count for the op (each input read once, each output written
once: x, y, gamma, beta, mean, rstd for LayerNorm), so the columns compare as the times do;
peer_torch.py's own figure (x and y only) is kept as peer_gbps in the combined JSON. PyTorch has
no fused residual-add in peer_torch.py (those rows have no peer); its backward rows are eager only.

Writes the combined JSON (every clnorm line with its peers, and the geometric means) to
COMBINED_JSON, by default combined.json beside CLNORM_JSON."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_json import bench_file, geomean, read_lines, shape_key  # noqa: E402

DTYPE_FROM_PEER = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}
IMPLS = ("torch-eager", "torch-compile")


def fmt(value, spec, none="—"):
    return none if value is None else format(value, spec)


def ratio_text(value):
    return "—" if value is None else f"{value:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("clnorm", help="normtune bench --grid --json output")
    ap.add_argument("torch", nargs="?", help="peer_torch.py output (optional)")
    ap.add_argument("--out", help="combined JSON (default: combined.json beside CLNORM_JSON)")
    a = ap.parse_args()

    header, results = bench_file(a.clnorm, "compare_peer")
    if not results:
        print(f"compare_peer: {a.clnorm} holds no normtune bench result", file=sys.stderr)
        return 1

    peers = {}  # (op, dtype, rows, cols) -> impl -> peer line
    if a.torch and os.path.exists(a.torch):
        for obj in read_lines(a.torch, "compare_peer"):
            if not {"op", "impl", "dtype", "rows", "cols", "us"} <= obj.keys():
                continue
            dtype = DTYPE_FROM_PEER.get(obj["dtype"], obj["dtype"])
            key = (obj["op"], dtype, int(obj["rows"]), int(obj["cols"]))
            peers.setdefault(key, {})[obj["impl"]] = obj
    elif a.torch:
        print(f"compare_peer: {a.torch} does not exist: no PyTorch columns", file=sys.stderr)

    combined = []
    for r in results:
        key = shape_key(r)
        us, nbytes = r.get("us"), r.get("bytes")
        row = {"op": r["op"], "dtype": r["dtype"], "rows": key[2], "cols": key[3], "clnorm": r}
        for impl in IMPLS:
            peer = peers.get(key, {}).get(impl)
            name = impl.replace("-", "_")
            if peer is None:
                row[name] = None
                row["vs_" + impl.split("-")[1]] = None
                continue
            peer_us = float(peer["us"])
            same = nbytes / (peer_us * 1e-6) / 1e9 if nbytes and peer_us > 0 else None
            row[name] = {"us": peer_us, "gbps": same, "peer_gbps": peer.get("gbps")}
            row["vs_" + impl.split("-")[1]] = peer_us / us if us and peer_us > 0 else None
        combined.append(row)

    device = header.get("device", results[0].get("device", "?"))
    copy = header.get("copy_gbps", results[0].get("copy_gbps"))
    print(f"## clnorm vs PyTorch on {device}")
    print()
    kernel = header.get("copy_kernel", "normtune's copy kernel")
    print(f"copy bandwidth {fmt(copy, '.1f')} GB/s ({kernel}, same run). "
          "GB/s: clnorm's byte count for every column (each input read once, each output "
          "written once); vs eager / vs compile: PyTorch's kernel time over clnorm's "
          "(above 1: clnorm faster). check: clnorm's output against the float64 reference.")
    if header.get("check"):
        print()
        print(f"clnorm check: {header['check']}.")
    if not peers:
        print()
        print("No PyTorch results were given: the peer columns are empty.")
    print()
    print("| op | dtype | rows x cols | clnorm GB/s | /copy | eager GB/s | compile GB/s "
          "| vs eager | vs compile | check |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    order = []
    for row in combined:
        r = row["clnorm"]
        group = (row["op"], row["dtype"])
        if group not in order:
            order.append(group)
    for group in order:
        for row in combined:
            if (row["op"], row["dtype"]) != group:
                continue
            r = row["clnorm"]
            eager, comp = row["torch_eager"], row["torch_compile"]
            check = r.get("check", "?")
            if check != "pass" and r.get("reason"):
                check += ": " + r["reason"]
            print(f"| {row['op']} | {row['dtype']} | {row['rows']} x {row['cols']} "
                  f"| {fmt(r.get('gbps'), '.1f')} | {fmt(r.get('ratio'), '.2f')} "
                  f"| {fmt(eager and eager['gbps'], '.1f')} | {fmt(comp and comp['gbps'], '.1f')} "
                  f"| {ratio_text(row['vs_eager'])} | {ratio_text(row['vs_compile'])} | {check} |")

    means = []
    for op, dtype in order:
        rows = [row for row in combined if (row["op"], row["dtype"]) == (op, dtype)
                and row["clnorm"].get("check") == "pass"]
        means.append({"op": op, "dtype": dtype, "shapes": len(rows),
                      "copy_ratio": geomean([row["clnorm"].get("ratio") for row in rows]),
                      "vs_eager": geomean([row["vs_eager"] for row in rows]),
                      "vs_compile": geomean([row["vs_compile"] for row in rows]),
                      "with_eager": sum(row["vs_eager"] is not None for row in rows),
                      "with_compile": sum(row["vs_compile"] is not None for row in rows)})
    print()
    print("Geometric means over the shapes that passed (shapes with a PyTorch figure in brackets):")
    print()
    print("| op | dtype | shapes passed | /copy | vs eager | vs compile |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for m in means:
        print(f"| {m['op']} | {m['dtype']} | {m['shapes']} | {fmt(m['copy_ratio'], '.2f')} "
              f"| {ratio_text(m['vs_eager'])} ({m['with_eager']}) "
              f"| {ratio_text(m['vs_compile'])} ({m['with_compile']}) |")
    failed = [row for row in combined if row["clnorm"].get("check") == "FAIL"]
    skipped = [row for row in combined if row["clnorm"].get("check") == "skipped"]
    print()
    print(f"{len(combined)} clnorm results: {len(combined) - len(failed) - len(skipped)} passed, "
          f"{len(failed)} FAILED, {len(skipped)} skipped.")

    out = a.out or os.path.join(os.path.dirname(os.path.abspath(a.clnorm)), "combined.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"header": header, "results": combined, "geomeans": means}, f, indent=1)
        f.write("\n")
    print(f"\n(combined JSON: {out})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
