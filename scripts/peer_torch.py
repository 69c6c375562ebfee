#!/usr/bin/env python3
"""PyTorch's LayerNorm and RMSNorm on the GPU, the peer clnorm is compared with.

usage: peer_torch.py [--shapes 4096x4096,256x65536] [--dtypes fp32,fp16,bf16] [--no-compile]
                     [--ops layernorm,rmsnorm,layernorm_bwd,rmsnorm_bwd]
Prints one JSON object per line: {"op", "impl", "dtype", "rows", "cols", "us", "gbps"}.
Time: the median kernel time from CUDA events (triton.testing.do_bench, which clears the L2
between runs); gbps counts x read once and y written once (2 * rows * cols * element size;
backward: dy and x read, dx written, 3 * rows * cols * element size).

The backward ops (eager only) time `torch.autograd.grad` of the forward's output for x, the
weight and (LayerNorm) the bias with a given dy, the forward run once beforehand and its graph
kept (retain_graph): the backward kernels alone, dx, dgamma and dbeta, as clnorm's backward call
computes them.

torch.compile is given every shape afresh: the compiled function is made with dynamic=False after
torch._dynamo.reset(), so that each shape gets the kernel Inductor specializes for it. One
compiled function called with many shapes recompiles a few times and then falls back to a
dynamic-shape kernel: on an H200, bfloat16 LayerNorm 8192 x 8192 then took 183 us where its own
specialized kernel takes 78 (docs/PERFORMANCE.md): a peer slower than it is."""
import argparse
import json

import torch
import torch.nn.functional as F
from triton.testing import do_bench

DEFAULT = ("1x4096,8x1024,32x2048,128x4096,512x1024,512x4096,1024x1024,4096x768,4096x4096,"
           "8192x8192,16384x4096,32768x1024,65536x512,4096x16384,256x65536,16x4194304")
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def layernorm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def rmsnorm(x, w, b):
    return F.rms_norm(x, (x.shape[-1],), w, 1e-6)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=DEFAULT)
    ap.add_argument("--dtypes", default="fp32,fp16,bf16")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--ops", default="layernorm,rmsnorm")
    a = ap.parse_args()
    known = {"layernorm": layernorm, "rmsnorm": rmsnorm}
    wanted = a.ops.split(",")
    ops = tuple((op, known[op]) for op in wanted if op in known)
    bwd_ops = tuple((op, known[op[:-4]]) for op in wanted
                    if op.endswith("_bwd") and op[:-4] in known)
    for dname in a.dtypes.split(","):
        dt = DTYPES[dname]
        for shape in a.shapes.split(","):
            rows, cols = map(int, shape.split("x"))
            x = torch.randn(rows, cols, device="cuda", dtype=dt)
            w = torch.randn(cols, device="cuda", dtype=dt)
            b = torch.randn(cols, device="cuda", dtype=dt)
            nbytes = 2 * rows * cols * x.element_size()
            for impl in ("eager",) if a.no_compile else ("eager", "compile"):
                for op, fn in ops:
                    if impl == "compile":
                        torch._dynamo.reset()
                        fn = torch.compile(fn, dynamic=False)
                    ms = do_bench(lambda: fn(x, w, b), warmup=25, rep=200, return_mode="median")
                    print(json.dumps({"op": op, "impl": "torch-" + impl, "dtype": dname,
                                      "rows": rows, "cols": cols, "us": round(ms * 1e3, 2),
                                      "gbps": round(nbytes / (ms * 1e-3) / 1e9, 1)}), flush=True)
            for op, fn in bwd_ops:
                xg = x.clone().requires_grad_(True)
                wg = w.clone().requires_grad_(True)
                bg = b.clone().requires_grad_(True)
                y = fn(xg, wg, bg)
                dy = torch.randn_like(y)
                inputs = (xg, wg, bg) if op == "layernorm_bwd" else (xg, wg)
                ms = do_bench(lambda: torch.autograd.grad(y, inputs, dy, retain_graph=True),
                              warmup=25, rep=200, return_mode="median")
                nb = 3 * rows * cols * x.element_size()
                print(json.dumps({"op": op, "impl": "torch-eager", "dtype": dname,
                                  "rows": rows, "cols": cols, "us": round(ms * 1e3, 2),
                                  "gbps": round(nb / (ms * 1e-3) / 1e9, 1)}), flush=True)
                del xg, wg, bg, y, dy


if __name__ == "__main__":
    main()
