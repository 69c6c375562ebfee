#!/usr/bin/env python3
"""Whether two trees' kernels are the same program after the preprocessor: for a sample of the
-D options the library passes (src/program.c), each kernel family's source (cl/common.cl, a
newline, then cl/forward.cl, split.cl or backward.cl, as src/program.c joins them; in a tree from
before forward.cl, layernorm.cl or rmsnorm.cl)
is run through clang's preprocessor for a CPU (x86-64) and an NVIDIA (nvptx64) target, and its
tokens compared. Where every sample gives the same tokens, a change to cl/ (a macro for a block
written twice, a default moved) cannot change what any device compiles: no kernel's speed or
result can move. Comments and whitespace do not count. Where the tokens differ, the two programs'
LLVM IR at -O2 for the same target is compared instead, and the same IR is accepted: the change was
one the optimizer undoes (a temporary, a renamed variable). That is clang's front end; NVIDIA's
driver compiles the source with its own, so same IR is strong evidence there, not proof.

usage: cl_tokens.py BASE_TREE HEAD_TREE [SAMPLES]   (default 400 valid option sets, fixed seed;
       combinations that both trees refuse with the same #error are drawn again)
Exit status 0 when every sample matches, 1 when one differs (the first difference is printed).
"""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

FAMILIES = (  # (file, fixed options)
    ("forward.cl", {"RMS": 0}),
    ("forward.cl", {"RMS": 1}),
    ("split.cl", {"RMS": 0}),
    ("split.cl", {"RMS": 1}),
    ("backward.cl", {"RMS": 0, "SPLIT": 0}),
    ("backward.cl", {"RMS": 1, "SPLIT": 0}),
    ("backward.cl", {"RMS": 0, "SPLIT": 1}),
    ("backward.cl", {"RMS": 1, "SPLIT": 1}),
)
# (WG, TPR) pairs the variant space holds: one item a row, slices of a group, whole groups
SHAPES = ((1, 1), (4, 1), (128, 1), (32, 4), (64, 8), (32, 32), (128, 32), (256, 256), (64, 64))
COMMON = {"ADD": (0, 1), "DTYPE": (0, 1, 2), "HOLD": (0, 1, 2, 4, 8), "STATS": (0, 1),
          "VEC": (1, 2, 4, 8, 16), "RVEC": (1, 16)}
# per target, the device options src/ctx.c sets there: PoCL's CPU device, NVIDIA's platform
TARGETS = (
    ("x86_64-unknown-linux-gnu",
     {"PTX": (0,), "RAW16": (0,), "REDUCE": (0, 1), "STREAM": (0, 1), "UNALIGNED": (0, 1),
      "RBUF": (0, 4096), "PREFETCH": (0, 1), "HWHALF": (0, 1)}),
)
TOKEN = re.compile(r"\s+")
SRCLOC = re.compile(r"^!\d+ = !\{i(32|64) \d+\}$")
# a family's file in a tree from before cl/forward.cl (2026-11-26): one file per op
OLD_FILES = {("forward.cl", 0): "layernorm.cl", ("forward.cl", 1): "rmsnorm.cl"}


def source(tree, family, options):
    """The program's source as src/program.c joins it: cl/common.cl, a newline, the family."""
    path = f"{tree}/cl/{family}"
    if not os.path.exists(path):
        path = f"{tree}/cl/{OLD_FILES.get((family, options.get('RMS')), family)}"
    return open(f"{tree}/cl/common.cl").read() + "\n" + open(path).read()


def clang():
    for name in ("clang", "clang-15", "clang-14"):
        if shutil.which(name):
            return name
    sys.exit("cl_tokens: no clang found")


def tokens(cc, tree, family, options, target):
    with tempfile.NamedTemporaryFile("w", suffix=".cl", delete=False) as f:
        f.write(source(tree, family, options))
        path = f.name
    args = [cc, "-E", "-P", "-x", "cl", "-cl-std=CL2.0", "-target", target, path]
    args += ["-D%s=%s" % kv for kv in sorted(options.items())]
    run = subprocess.run(args, capture_output=True, text=True)
    os.unlink(path)
    if run.returncode != 0:
        first = run.stderr.strip().splitlines()[0] if run.stderr.strip() else ""
        return "error: " + re.sub(r"^.*?:\d+:\d+: ", "", first)  # the message, not its line
    return TOKEN.sub(" ", run.stdout).strip()


def optimized_ir(cc, tree, family, options, target):
    """The kernel family's LLVM IR at -O2 for the target (NVIDIA's as nvptx64-nvidia-nvcl, with
    GNU asm for the kernels' inline PTX), without the module's name and the compiler's
    identification: what remains is the code."""
    with tempfile.NamedTemporaryFile("w", suffix=".cl", delete=False) as f:
        f.write(source(tree, family, options))
        path = f.name
    nvidia = target.startswith("nvptx")
    args = [cc, "-x", "cl", "-cl-std=CL2.0", "-Xclang", "-finclude-default-header", "-Xclang",
            "-cl-ext=+all", "-w",
            "-target", "nvptx64-nvidia-nvcl" if nvidia else target, "-O2", "-emit-llvm", "-S",
            "-o", "-", path] + (["-fasm"] if nvidia else [])
    args += ["-D%s=%s" % kv for kv in sorted(options.items())]
    run = subprocess.run(args, capture_output=True, text=True)
    os.unlink(path)
    if run.returncode != 0:
        return None
    # an inline asm statement's !srcloc is its offset in the source: a single-integer node
    keep = [line for line in run.stdout.splitlines()
            if not line.startswith(("; ModuleID", "source_filename", "!llvm.ident", "!0 =",
                                    "!1 =", "!2 =")) and not SRCLOC.match(line)]
    return "\n".join(keep)


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    base, head = argv[0], argv[1]
    samples = int(argv[2]) if len(argv) == 3 else 400
    cc = clang()
    rng = random.Random(20261126)
    compared = invalid = n = same_ir = 0
    by_ir = {}
    while compared < samples and n < 20 * samples:
        family, fixed = FAMILIES[n % len(FAMILIES)]
        target, device = TARGETS[n // len(FAMILIES) % len(TARGETS)]
        n += 1
        wg, tpr = rng.choice(SHAPES)
        options = {k: rng.choice(v) for k, v in list(COMMON.items()) + list(device.items())}
        options.update(fixed, WG=wg, TPR=tpr)
        a = tokens(cc, base, family, options, target)
        b = tokens(cc, head, family, options, target)
        if a.startswith("error") and a == b:
            invalid += 1  # a combination the kernels refuse (#error) in both trees alike
            continue
        for tree, text in ((base, a), (head, b)):
            if text.startswith("error"):
                print(f"cl_tokens: {family} {target} {options}: the preprocessor failed on "
                      f"{tree} (the other tree: {'failed otherwise' if a.startswith('error') and b.startswith('error') else 'fine'}): {text}")
                return 1
        compared += 1
        if a != b:
            # other tokens: the same code where the optimizer makes the same IR of both (a const
            # temporary, a block moved into a macro with its names changed)
            ia = optimized_ir(cc, base, family, options, target)
            ib = optimized_ir(cc, head, family, options, target)
            if ia is None or ib is None:
                print(f"cl_tokens: {family} {target} {options}: the tokens differ and clang "
                      f"could not compile {'the base' if ia is None else 'the head'} to compare "
                      f"the code")
                return 1
            if ia == ib:
                same_ir += 1
                by_ir[family] = by_ir.get(family, 0) + 1
                continue
        if a != b:
            i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            print(f"cl_tokens: {family} {target} {options}: the tokens differ at character {i}:")
            print(f"  base: ...{a[max(0, i - 200):i + 200]}...")
            print(f"  head: ...{b[max(0, i - 200):i + 200]}...")
            return 1
    if compared < samples:
        print(f"cl_tokens: only {compared} of {n} option sets are valid kernels", file=sys.stderr)
        return 1
    print(f"cl_tokens: {compared} option sets of {len(FAMILIES)} kernel families, for x86-64 and "
          f"nvptx64 ({invalid} more refused alike by both): the same tokens after the "
          f"preprocessor in {base} and {head}" +
          (f", but for {same_ir} whose optimized LLVM IR is the same (" +
           ", ".join(f"{f} {c}" for f, c in sorted(by_ir.items())) + ")" if same_ir else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
