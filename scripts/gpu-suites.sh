#!/usr/bin/env bash
# The single-GPU suites on a lent H200 (or any GPU runner without network) with Transformer Engine.
#
# Device call:  carry [".te", ".whl"], command `bash scripts/gpu-suites.sh [PROFILE] [SECONDS]`
# It runs the suites as chunks into one results folder, most important first (contracts, gemm,
# linear, quantize, rht), and starts no chunk once SECONDS (default 540) are nearly spent, so a call
# that hits its limit still brings back every finished chunk in $OUT/suites.tar.gz.
# Both GPUs of a 2-GPU machine, across several calls: scripts/gpu-session.sh.
set -uo pipefail
profile=${1:-quick}
budget=${2:-540}
start=$SECONDS
source scripts/gpu-env.sh || exit 1
source scripts/gpu-chunks.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
in_chunks .gpu-results/suites $((budget - SECONDS)) --profile "$profile" --machine h200 \
  -- '^contracts\.' '^gemm\.' '^linear\.' '^quantize\.' '^rht\.'
[[ -n ${OUT:-} && -d .gpu-results/suites ]] && tar czf "$OUT/suites.tar.gz" -C .gpu-results --exclude=.inductor-cache suites
echo "== total $((SECONDS - start)) s"
