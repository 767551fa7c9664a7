#!/usr/bin/env bash
# The distributed suite on a lent 2-GPU machine (nvidia-h200-x2) with Transformer Engine 2.20.2.
#
# Here, once:   what scripts/gpu-env.sh says
# Device call:  carry [".te", ".whl", ".gpu-results/distributed"], command
#                   bash scripts/gpu-distributed.sh eager       then, once its results are back here,
#                   bash scripts/gpu-distributed.sh compiled
#               Each part is meant for one 10-minute call; the second carries the first's results
#               back, and `tewatch run` merges both parts of one TE commit into one results file.
#               `all` runs both in one call (a machine without the 10-minute limit).
# Back here:    mkdir -p .gpu-results && tar xzf <files_at>/distributed.tar.gz -C .gpu-results
#               python scripts/distributed_scaling.py .gpu-results/distributed
set -uo pipefail
part=${1:-all}
budget=${2:-560}
source scripts/gpu-chunks.sh
case $part in
  eager) chunks=("${CHUNKS_DISTRIBUTED[0]}") ;;
  compiled) chunks=("${CHUNKS_DISTRIBUTED[1]}") ;;
  all) chunks=("${CHUNKS_DISTRIBUTED[@]}") ;;
  *) echo "usage: $0 eager|compiled|all [SECONDS]" >&2; exit 2 ;;
esac
source scripts/gpu-env.sh || exit 1   # also keeps NVLink multicast off in everything it starts
nvidia-smi topo -m
python3 -c 'import torch; print("GPUs:", torch.cuda.device_count())'
in_chunks .gpu-results/distributed $((budget - SECONDS)) --profile full --backends te --machine h200x2 \
  -- "${chunks[@]}"
status=$?
echo "== distributed $part: exit $status, ${SECONDS}s"
[[ -n ${OUT:-} && -d .gpu-results/distributed ]] && tar czf "$OUT/distributed.tar.gz" -C .gpu-results --exclude=.inductor-cache distributed
exit $status
