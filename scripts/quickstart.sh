#!/usr/bin/env bash
# The quick start: set up .venv, load the bundled real H200 results into an SQLite store, run the CPU
# suites (torch-ref) once through asv, add them, detect, and serve the dashboard on 127.0.0.1:8000.
# Extra arguments go to `tewatch demo` (e.g. --port 8080, --no-run-suites, --db postgresql://...).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q torch==2.13.0        # the CPU build; an unpinned torch pulls a multi-GB CUDA one
.venv/bin/pip install -q -e ".[suites]"
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-$PWD/.inductor-cache}
exec .venv/bin/tewatch demo "$@"
