#!/usr/bin/env bash
# One GPU call (carry .device-kit): a patch timed against the tree without it.
#   bash scripts/explore/session45/patch_ab.sh [-R] PATCH [ab_builds.sh's bench options]
#   e.g. ... docs/wip/issue21/bwd-f32-tpr32.patch --grid 4096x1024 --ops layernorm_bwd --dtypes f32
# Without -R the tree lacks the patch: the base is a copy of the tree made before the patch is
# applied here (so it cannot pick up a stale reverse patch), and the patch is reverted at the end.
# With -R the tree holds the patch already: the base is a copy with the patch reversed. Either way
# the diff between the two trees' src/ and cl/ is printed first: the comparison is of that and
# nothing else. scripts/ab_builds.sh runs ROUNDS (default 3) rounds. Files: $OUT/ab.md; the
# rounds' JSONs and logs packed in $OUT/all.tar.gz.
set -uo pipefail
root=$PWD
reverse=0
if [ "${1:-}" = -R ]; then
  reverse=1
  shift
fi
patch_file=${1:?usage: patch_ab.sh [-R] PATCH [bench options]}
shift
out=${OUT:-$root/build-ab}
mkdir -p "$out"
# shellcheck source=scripts/gpu_build.sh
source "$root/scripts/gpu_build.sh"
base=$(mktemp -d)/ab-base
gpu_tree_copy "$base" || { echo "patch_ab: copying the tree failed"; exit 1; }
if [ $reverse = 1 ]; then
  patch -R -p1 -d "$base" <"$patch_file" >/dev/null ||
    { echo "patch_ab: $patch_file does not reverse on this tree"; exit 1; }
else
  patch -p1 --forward <"$patch_file" >/dev/null ||
    { echo "patch_ab: $patch_file does not apply"; exit 1; }
fi
echo "== what the head has that the base has not (diff -ru base head, src and cl)"
diff -ru "$base/src" "$root/src"
diff -ru "$base/cl" "$root/cl"
OUT=$out BASE=$base ROUNDS=${ROUNDS:-3} bash scripts/ab_builds.sh "$@" >"$out/ab-log.txt" 2>&1
rc=$?
echo "ab rc=$rc"
[ $reverse = 1 ] || patch -R -p1 <"$patch_file" >/dev/null
(cd "$out" && tar -czf all.tar.gz ./*.json ./*.log ab-log.txt 2>/dev/null &&
  rm -f ./*.json ./*.log ab-log.txt)
cat "$out/ab.md"
exit $rc
