# shellcheck shell=bash
# Sourced by the GPU-machine scripts (bench_gpu.sh, tune_gpu.sh, env_sweep.sh, gpu_explore.sh,
# explore/space.sh):
#   gpu_build DIR TARGET...    a Release build of the targets in DIR (tests off; TESTS=ON: on,
#                              for test targets), configured once; prints the build's output and
#                              returns 1 when it fails, silent when it succeeds.
#   gpu_tree_copy DEST [PATCH] a copy of the checkout ($root) in DEST, without .git, the kit, the
#                              arms' trees, build-tune and the build folders; PATCH applied (-p1), or
#                              return 1 when it does not apply (patch_ab.sh, explore/session50/
#                              arms.sh).
#   gpu_test_ops TREE OUT PARTS DEVICES
#                              test_ops built in TREE/build-tests, then `test_ops PART` for each of
#                              the comma-separated PARTS on each of the comma-separated DEVICES
#                              (CLNORM_TEST_DEVICE), all at once, each within TEST_LIMIT seconds
#                              (default 240); logs OUT/DEVICE-PART.log; prints each one's exit
#                              status, failures and summary line (explore/session49, session52).
# shellcheck disable=SC2154 # root: the repository root, set by the script that sources this
gpu_build() {
  local dir=$1 log
  shift
  if ! log=$(cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCLNORM_BUILD_TESTS="${TESTS:-OFF}" 2>&1 &&
             cmake --build "$dir" -j"$(nproc)" --target "$@" 2>&1); then
    echo "$log" >&2
    echo "gpu_build: building $* in $dir failed" >&2
    return 1
  fi
}

# gpu_build_parts NORMTUNE PROCS SECONDS OPTION...: `NORMTUNE build OPTION... --part I/PROCS
# --quiet` in PROCS processes at once (NVIDIA's compiler runs one program at a time per process,
# docs/DEVICES.md), each sent SIGINT after SECONDS (what it built is kept and counted, exit status
# 130); their output printed in part order, a part's exit status other than 0 said on stderr.
gpu_build_parts() {
  local nt=$1 procs=$2 limit=$3 logs i pids=()
  shift 3
  logs=$(mktemp -d)
  for i in $(seq 1 "$procs"); do
    timeout -s INT -k 30 "$limit" "$nt" build "$@" --part "$i/$procs" --quiet >"$logs/$i.txt" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || echo "== build: part $((i + 1))/$procs exited with status $?" >&2
  done
  for i in $(seq 1 "$procs"); do cat "$logs/$i.txt"; done
  rm -rf "$logs"
}

gpu_tree_copy() {
  local dest=$1 patch_file=${2:-}
  mkdir -p "$dest" &&
    tar -c -C "$root" --exclude=./build-tune --exclude=./.device-kit --exclude='./build-*' \
      --exclude='./bis-*' --exclude=./ab-base \
      --exclude=./.git . | tar -x -C "$dest" || return 1
  [ -z "$patch_file" ] || patch -p1 -d "$dest" <"$patch_file" >/dev/null ||
    { echo "gpu_tree_copy: $patch_file does not apply" >&2; return 1; }
}

gpu_test_ops() {
  local tree=$1 out=$2 parts devs pids=() names=() i
  IFS=, read -r -a parts <<<"$3"
  IFS=, read -r -a devs <<<"$4"
  root=$tree TESTS=ON gpu_build "$tree/build-tests" test_ops || return 1
  for dev in "${devs[@]}"; do
    for part in "${parts[@]}"; do
      CLNORM_TEST_DEVICE=$dev timeout "${TEST_LIMIT:-240}" "$tree/build-tests/tests/test_ops" \
        "$part" >"$out/$dev-$part.log" 2>&1 &
      pids+=($!)
      names+=("$dev $part")
    done
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    echo "== ${names[$i]% *} test_ops ${names[$i]#* }: rc=$?"
    grep -E "^FAIL" "$out/${names[$i]/ /-}.log" | cut -c1-240 | head -8
    tail -1 "$out/${names[$i]/ /-}.log" | cut -c1-400
  done
}
