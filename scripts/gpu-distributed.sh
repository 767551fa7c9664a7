#!/usr/bin/env bash
# The distributed suite on a lent 2-GPU machine (nvidia-h200-x2) with Transformer Engine 2.20.2.
#
# Here, once:   bash ../shared/gpu/prepare-te.sh        (fills .te/; .whl/ holds asv and its deps)
# Device call:  carry [".te", ".whl", ".gpu-results"], command
#                   bash scripts/gpu-distributed.sh eager       (then, on the results it brings back:)
#                   bash scripts/gpu-distributed.sh compiled
#               Each part fits in one 10-minute call; the second carries the first's results back
#               (.gpu-results/, unpacked here from $OUT/distributed-results.tar.gz), and `tewatch run`
#               merges the two parts of one TE commit into one results file. `all` runs both.
# Back here:    tar xzf <files_at>/distributed-results.tar.gz -C .gpu-results
set -euo pipefail
part=${1:-all}
case $part in
  eager) bench="^distributed\..*'eager'\)$" ;;
  compiled) bench="^distributed\..*'default'\)$" ;;
  all) bench='^distributed\.' ;;
  *) echo "usage: $0 eager|compiled|all" >&2; exit 2 ;;
esac
# NVLink multicast stays off in this shell and everything it starts (the launcher sets them again)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bash .te/install-te.sh
python3 -m pip install -q --no-index --no-deps .whl/*.whl
# the runner's package `tewatch` is the folder service/; no install needed
mkdir -p /tmp/tewatch-path && ln -sfn "$PWD/service" /tmp/tewatch-path/tewatch
export PYTHONPATH=/tmp/tewatch-path${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi topo -m
python3 -c 'import torch; print("GPUs:", torch.cuda.device_count())'
mkdir -p .gpu-results
status=0
python3 -m tewatch.runner --profile full --backends te --bench "$bench" \
  --results-dir .gpu-results/results --machine h200x2 || status=$?
if [[ -n ${OUT:-} ]]; then
  tar czf "$OUT/distributed-results.tar.gz" -C .gpu-results results
fi
exit $status
