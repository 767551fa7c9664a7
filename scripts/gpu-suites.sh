#!/usr/bin/env bash
# The single-GPU suites on a lent H200 (or any GPU runner without network) with Transformer Engine.
#
# Device call:  carry [".te", ".whl"], command `bash scripts/gpu-suites.sh [PROFILE] [SECONDS]`
# It runs the suites in chunks, most important first (contracts, gemm, linear, quantize, rht), each
# with its own results folder, and stops starting chunks when SECONDS (default 540) are nearly spent,
# so a call that hits its limit still brings back every finished chunk as $OUT/<chunk>.tar.gz.
# A whole profile in one results folder: scripts/gpu-session.sh.
set -uo pipefail
profile=${1:-quick}
budget=${2:-540}
start=$SECONDS
source scripts/gpu-env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for chunk in contracts gemm linear quantize rht; do
  left=$(( budget - (SECONDS - start) - 15 ))
  if (( left < 45 )); then echo "== $chunk: skipped, ${left}s left"; continue; fi
  echo "== $chunk (up to ${left}s)"
  t0=$SECONDS
  timeout --signal=INT --kill-after=10 "$left" python3 -m tewatch.runner --profile "$profile" \
    --bench "^$chunk\." --results-dir ".gpu-results/$chunk" --machine h200
  echo "== $chunk: exit $?, $(( SECONDS - t0 ))s"
  [[ -n ${OUT:-} && -d .gpu-results/$chunk ]] && tar czf "$OUT/$chunk.tar.gz" -C .gpu-results "$chunk"
done
echo "== total $(( SECONDS - start ))s"
