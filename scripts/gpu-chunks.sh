# Sourced by the scripts/gpu-*.sh. asv saves a run's results only when it ends, so on time-boxed machines
# a profile runs as a few `tewatch run --bench` chunks into one results folder (they merge under one
# commit): a chunk cut off by the time limit loses itself alone.

# the distributed suite's two halves, eager and compiled
CHUNKS_DISTRIBUTED=("^distributed\\..*'eager'\\)$" "^distributed\\..*'default'\\)$")

in_chunks() {  # in_chunks RESULTS-DIR SECONDS RUNNER-OPTIONS... -- CHUNK...; returns the worst exit code
  local dir=$1 seconds=$2 start=$SECONDS left bench code worst=0 opts=()
  shift 2
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  for bench in "$@"; do
    left=$((seconds - (SECONDS - start)))
    if ((left < 60)); then echo "== chunk $bench: not run, ${left} s left"; worst=124; continue; fi
    timeout --signal=INT --kill-after=20 "$left" python3 -m tewatch.runner "${opts[@]}" --bench "$bench" \
      --results-dir "$dir"
    code=$?
    ((code > worst)) && worst=$code
    echo "== chunk $bench: exit $code, at $((SECONDS - start)) s"
  done
  return $worst
}
