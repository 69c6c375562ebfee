#!/usr/bin/env bash
# The code NVIDIA's OpenCL makes of the variants the dispatcher picks, on the GPU machine: for
# each OP:DTYPE:ROWSxCOLS, one `normtune bench --grid` call through the dispatcher (checked against
# the float64 reference) with an empty binary cache, then every program the call built is read
# back from that cache (NVIDIA's program binary is PTX text) and, per program, prints the
# variant's options, the widths of its global loads and stores (bytes per access: 2 is a scalar
# half, 16 a uint4 / float4), and the registers, spills and stack frame `ptxas -v` reports for
# sm_90.
#
#   bash scripts/ptx_audit.sh [OP:DTYPE:ROWSxCOLS ...]   # default: the 16-bit forward ops at
#                                                         # 4096x4096, 8192x8192 and 4096x16384
# Files go to $OUT (or ./ptx-audit): audit.md, and ptx/*.ptx for each program.
# Environment: NORMTUNE=PATH (default: build-bench/normtune, built by scripts/bench_gpu.sh or
# here), DEVICE (default NVIDIA), PTXAS (default /usr/local/cuda/bin/ptxas), ARCH (sm_90).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/ptx-audit}
mkdir -p "$out/ptx"
normtune=${NORMTUNE:-$root/build-bench/normtune}
if [ ! -x "$normtune" ]; then
  cmake -S "$root" -B "$root/build-bench" -DCMAKE_BUILD_TYPE=Release -DCLNORM_BUILD_TESTS=OFF \
    >/dev/null
  cmake --build "$root/build-bench" -j"$(nproc)" --target normtune >/dev/null
fi
ptxas=${PTXAS:-/usr/local/cuda/bin/ptxas}
arch=${ARCH:-sm_90}
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
  for op in layernorm rmsnorm add_layernorm add_rmsnorm; do
    for dt in f16 bf16; do
      for shape in 4096x4096 8192x8192 4096x16384; do
        cases+=("$op:$dt:$shape")
      done
    done
  done
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
report=$out/audit.md
{
  echo "| op | dtype | rows x cols | program (variant options) | loads: bytes x count | stores: bytes x count | registers | spill bytes (st/ld) | stack bytes |"
  echo "| --- | --- | --- | --- | --- | --- | ---: | --- | --- |"
} >"$report"
rc=0
for c in "${cases[@]}"; do
  IFS=: read -r op dt shape <<<"$c"
  cache=$work/cache-$op-$dt-$shape
  rm -rf "$cache"
  mkdir -p "$cache"
  if ! CLNORM_BINARY_CACHE_DIR=$cache "$normtune" bench --grid "$shape" --device "${DEVICE:-NVIDIA}" \
      --db "$work/none.db" --ops "$op" --dtypes "$dt" --json --quiet >"$work/bench.json" \
      2>"$work/bench.log"; then
    echo "ptx_audit: $c: normtune bench failed:" >&2
    cat "$work/bench.log" >&2
    rc=1
    continue
  fi
  PYTHONPATH="$root/scripts${PYTHONPATH:+:$PYTHONPATH}" python3 - "$cache" "$out/ptx" "$op" "$dt" \
    "$shape" "$ptxas" "$arch" >>"$report" <<'EOF'
import collections, os, re, subprocess, sys
from bincache_ptx import entries
cache, ptxdir, op, dt, shape, ptxas, arch = sys.argv[1:]
WIDTH = {"u8": 1, "s8": 1, "b8": 1, "u16": 2, "s16": 2, "b16": 2, "f16": 2, "u32": 4, "s32": 4,
         "b32": 4, "f32": 4, "u64": 8, "s64": 8, "b64": 8, "f64": 8}
def widths(ptx, kind):
    count = collections.Counter()
    for m in re.finditer(r"\b%s\.global(?:\.[a-z]+)*?(?:\.v(\d))?\.([usbf]\d+)\b" % kind, ptx):
        count[int(m.group(1) or 1) * WIDTH[m.group(2)]] += 1
    return ", ".join("%dB x %d" % (w, n) for w, n in sorted(count.items())) or "-"
for _, name, key, payload in entries(cache, "name"):
    ptx = payload.decode("utf-8", "replace")
    opts = " ".join(o for o in re.findall(r"-D(?:WG|TPR|VEC|HOLD|REDUCE|STATS|SPLIT|RAW16|PTX)=\d+", key))
    path = os.path.join(ptxdir, "%s-%s-%s-%s.ptx" % (op, dt, shape, name[:12]))
    open(path, "w").write(ptx)
    p = subprocess.run([ptxas, "-arch=" + arch, "-v", path, "-o", os.devnull],
                       capture_output=True, text=True)
    open(path[:-4] + ".ptxas.txt", "w").write(p.stdout + p.stderr)  # ptxas -v's own words
    def per_kernel(pattern):  # one figure per kernel of the program, in ptxas's order
        return ",".join("/".join(m) if isinstance(m, tuple) else m
                        for m in re.findall(pattern, p.stderr)) or "?"
    # a stack frame without spills: an array the compiler left in memory (a loop it did not unroll)
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        op, dt, shape, opts, widths(ptx, "ld"), widths(ptx, "st"),
        per_kernel(r"Used (\d+) registers"),
        per_kernel(r"(\d+) bytes spill stores, (\d+) bytes spill loads"),
        per_kernel(r"(\d+) bytes stack frame")))
EOF
done
cat "$report"
exit $rc
