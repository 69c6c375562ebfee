#!/usr/bin/env python3
"""Per kernel of NVIDIA machine code (cuobjdump -sass text): how many instructions of each kind,
for reading a kernel's work an element beside another's (docs/DEVICES.md, "Machine code without
a GPU").

usage: sass_counts.py FILE.sass ...   (or FILE.ptx / FILE.cubin with ptxas and cuobjdump found:
        PTXAS, CUOBJDUMP, else on PATH or /usr/local/cuda/bin; cuobjdump also comes in PyPI's
        nvidia-cuda-cuobjdump wheel)
Prints a markdown table, one row per kernel (`Function :` section) of each file: registers (from
`ptxas -v` when a FILE.ptxas.txt or the PTX is at hand), threads a group (.reqntid, or num_warps
of Triton's FILE.json), SASS instructions in all, global loads and stores, shuffles, barriers,
conversions (F2F, F2FP, PRMT, I2F, and HADD2.F32, which is how sm_90 widens a half), FP32
arithmetic, MUFU. Static counts: a branch not taken counts as much as the hot path."""
import json, os, re, shutil, subprocess, sys, tempfile

def tool(env, name):
    return os.environ.get(env) or shutil.which(name) or "/usr/local/cuda/bin/" + name

def sass_of(path, tmp):
    if path.endswith(".sass"):
        return open(path).read()
    cubin = path
    if path.endswith(".ptx"):
        text = open(path, "rb").read().replace(b"\0", b"")
        src = os.path.join(tmp, "k.ptx")
        open(src, "wb").write(text)
        cubin = os.path.join(tmp, "k.cubin")
        subprocess.run([tool("PTXAS", "ptxas"), "-arch=sm_90", src, "-o", cubin], check=True)
    return subprocess.run([tool("CUOBJDUMP", "cuobjdump"), "-sass", cubin], check=True,
                          capture_output=True, text=True).stdout

def registers(path):
    base = re.sub(r"\.(sass|cubin|ptx)$", "", path)
    for f in (base + ".ptxas.txt",):
        if os.path.exists(f):
            return ",".join(re.findall(r"Used (\d+) registers", open(f).read()))
    if path.endswith(".ptx"):  # NVIDIA's program binary ends in a NUL, which ptxas refuses
        p = subprocess.run([tool("PTXAS", "ptxas"), "-arch=sm_90", "-v", "-", "-o", os.devnull],
                           input=open(path, "rb").read().replace(b"\0", b""),
                           capture_output=True)
        p.stdout, p.stderr = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        return ",".join(re.findall(r"Used (\d+) registers", p.stdout + p.stderr))
    return ""

def threads(path):
    base = re.sub(r"\.(sass|cubin|ptx)$", "", path)
    if os.path.exists(base + ".json"):
        try:
            return str(32 * int(json.load(open(base + ".json")).get("num_warps", 0)))
        except (ValueError, OSError):
            return ""
    if os.path.exists(base + ".ptx"):
        m = re.search(r"\.reqntid (\d+)", open(base + ".ptx", errors="replace").read())
        return m.group(1) if m else ""
    return ""

KINDS = [("LDG", ("LDG",)), ("STG", ("STG",)), ("SHFL", ("SHFL",)), ("BAR", ("BAR",)),
         ("conversions", ("F2F", "F2FP", "PRMT", "I2F")), ("FADD/FMUL/FFMA", ("FADD", "FMUL", "FFMA")),
         ("MUFU", ("MUFU",))]

def main():
    print("| file | kernel | registers | threads | SASS | HADD2.F32 | " +
          " | ".join(k for k, _ in KINDS) + " |")
    print("| --- " * (6 + len(KINDS)) + "|")
    tmp = tempfile.mkdtemp()
    for path in sys.argv[1:]:
        if not os.path.exists(path):  # an unmatched glob of the caller's
            continue
        kernel, ops = None, []
        def row():
            if kernel is None:
                return
            n = lambda names: sum(1 for o in ops if o.split(".")[0] in names)
            widen = sum(1 for o in ops if o.startswith("HADD2.F32"))
            print("| %s | %s | %s | %s | %d | %d | %s |" % (
                os.path.basename(path), kernel, registers(path), threads(path), len(ops), widen,
                " | ".join(str(n(names)) for _, names in KINDS)))
        for line in sass_of(path, tmp).splitlines():
            m = re.search(r"Function : (\S+)", line)
            if m:
                row()
                kernel, ops = m.group(1), []
            elif re.match(r"\s+/\*[0-9a-f]{4}\*/", line):
                ins = re.sub(r"^\s*/\*[0-9a-f]+\*/\s*(@!?U?P\w+\s+)?", "", line.split(";")[0])
                ops.append(ins.split(" ")[0])
        row()
    shutil.rmtree(tmp)

if __name__ == "__main__":
    main()
