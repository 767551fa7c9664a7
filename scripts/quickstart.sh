#!/usr/bin/env bash
# The quick start: set up .venv, load the bundled real H200 results into an SQLite store, run the CPU
# suites (torch-ref) once through asv, add them, detect, and serve the dashboard on 127.0.0.1:8000.
# Extra arguments go to `tewatch demo` (e.g. --port 8080, --no-run-suites, --db postgresql://...).
# Each step prints a line when it starts and when it ends, with the time it took; a long one (pip's
# downloads) says every QUICKSTART_HEARTBEAT_S seconds (default 15) that it is still going.
set -euo pipefail
cd "$(dirname "$0")/.."

HEARTBEAT_S=${QUICKSTART_HEARTBEAT_S:-15}
heartbeat_pid=""
trap '[ -z "$heartbeat_pid" ] || kill "$heartbeat_pid" 2>/dev/null || true' EXIT

# step "what it does" command...: run the command in the foreground, with a line before, after and every
# HEARTBEAT_S seconds in between
step() {
    local what=$1 start=$SECONDS
    shift
    echo "quickstart: $what ..."
    (while sleep "$HEARTBEAT_S"; do echo "quickstart:   still $what, $((SECONDS - start)) s so far"; done) &
    heartbeat_pid=$!
    local status=0
    "$@" || status=$?
    kill "$heartbeat_pid" 2>/dev/null || true
    wait "$heartbeat_pid" 2>/dev/null || true
    heartbeat_pid=""
    if [ "$status" != 0 ]; then
        echo "quickstart: $what failed after $((SECONDS - start)) s (exit status $status)" >&2
        exit "$status"
    fi
    echo "quickstart: $what: done in $((SECONDS - start)) s"
}

step "creating .venv" python3 -m venv .venv
step "installing torch 2.13.0, the CPU build (a large download on a first run)" \
    bash scripts/install-torch.sh .venv
step "installing tewatch, the suites' packages (asv, asv_runner, nvidia-ml-py) and pandas for tewatch.client" \
    .venv/bin/pip install -q -e ".[suites,analysis]"
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$PWD/.inductor-cache}
echo "quickstart: starting the demo ($((SECONDS)) s so far)"
exec .venv/bin/tewatch demo "$@"
