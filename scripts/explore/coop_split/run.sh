#!/usr/bin/env bash
# On the GPU machine (an NVIDIA GPU; never PoCL: its groups run to completion and the prototype
# would hang): build and run the one-read prototype of coop.cl, a minute at most (a deadlock
# ends at the limit). Results of 2026-11-28 (H200): docs/DEVICES.md, "the groups of a row can
# wait for each other".
#   bash scripts/explore/coop_split/run.sh [ROWSxCOLS ...]    (cols: a multiple of 16384)
set -euo pipefail
cd "$(dirname "$0")"
cc -O2 -o /tmp/coop coop.c -lOpenCL -lm
timeout "${LIMIT:-90}" /tmp/coop "$@"
