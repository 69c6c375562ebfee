#!/usr/bin/env python3
"""PyTorch's CPU LayerNorm and RMSNorm, timed as the peer of clnorm on PoCL (issue 6).

usage: peer_cpu.py [--shapes 4096x4096,256x65536] [--dtypes fp32,fp16,bf16] [--threads N]
                   [--min-seconds S]

Prints one JSON object per line, in peer_torch.py's format so that compare_peer.py reads it:
{"op", "impl": "torch-eager", "device": "cpu", "threads", "dtype", "rows", "cols", "us", "gbps"}.
The time is the median wall time of one call (torch.nn.functional.layer_norm / rms_norm on
contiguous CPU tensors, eps 1e-5 / 1e-6) after three warm-up calls, over at least 5 calls and at
least --min-seconds of calls; gbps counts x read once and y written once
(2 * rows * cols * element size), as peer_torch.py does. --threads (default: every core
torch sees) is passed to torch.set_num_threads: run it on the cores PoCL uses, in the same
command as `normtune bench`."""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

DEFAULT = ("1x4096,8x1024,32x2048,128x4096,512x256,512x1024,512x4096,1024x1024,4096x768,"
           "4096x4096,8192x8192,16384x4096,32768x1024,65536x512,4096x16384,256x65536,16x4194304")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def median_seconds(fn, min_seconds):
    for _ in range(3):
        fn()
    times = []
    start = time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= 10000:
            break
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=DEFAULT)
    ap.add_argument("--dtypes", default="fp32,fp16,bf16")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--min-seconds", type=float, default=0.3)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    threads = torch.get_num_threads()
    ops = (("layernorm", lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)),
           ("rmsnorm", lambda x, w, b: F.rms_norm(x, (x.shape[-1],), w, 1e-6)))
    gen = torch.Generator().manual_seed(1)
    with torch.inference_mode():
        for dname in a.dtypes.split(","):
            dt = DTYPES[dname]
            for shape in a.shapes.split(","):
                rows, cols = map(int, shape.split("x"))
                x = torch.randn(rows, cols, generator=gen).to(dt)
                w = torch.randn(cols, generator=gen).to(dt)
                b = torch.randn(cols, generator=gen).to(dt)
                nbytes = 2 * rows * cols * x.element_size()
                for op, fn in ops:
                    s = median_seconds(lambda: fn(x, w, b), a.min_seconds)
                    print(json.dumps({"op": op, "impl": "torch-eager", "device": "cpu",
                                      "threads": threads, "dtype": dname, "rows": rows,
                                      "cols": cols, "us": round(s * 1e6, 2),
                                      "gbps": round(nbytes / s / 1e9, 2)}), flush=True)


if __name__ == "__main__":
    main()
