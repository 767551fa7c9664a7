#!/usr/bin/env bash
# install-torch.sh VENV: install torch's CPU build into the virtual environment VENV.
# From PyTorch's CPU wheel index where it answers; else from the indexes pip is configured with, first as
# the CPU build (`+cpu`, which a mirror or a wheel folder may hold), last as PyPI's torch, which on Linux
# x86_64 is the CUDA build (several GB of nvidia-* wheels): each fallback says so.
# TEWATCH_TORCH_CPU_INDEX overrides the CPU index (an internal mirror of it, say).
set -euo pipefail

venv=$1
version=2.13.0
cpu_index=${TEWATCH_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}

# whether the index answers its page for torch within 10 s
reachable() {
    "$venv/bin/python" - "${1%/}/torch/" <<'EOF'
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=10).close()
except Exception as exc:  # unreachable, refused, an HTTP error: each means "not from this index"
    print(f"install-torch: {sys.argv[1]}: {exc}", file=sys.stderr)
    sys.exit(1)
EOF
}

if reachable "$cpu_index"; then
    echo "install-torch: torch $version, the CPU build, from $cpu_index"
    exec "$venv/bin/pip" install -q --index-url "$cpu_index" "torch==$version"
fi
echo "install-torch: PyTorch's CPU wheel index cannot be reached; looking for torch $version+cpu in pip's configured indexes"
if "$venv/bin/pip" install -q "torch==$version+cpu" 2>/dev/null; then
    echo "install-torch: torch $version+cpu, the CPU build, from pip's configured indexes"
    exit 0
fi
echo "install-torch: no torch $version+cpu there either: installing torch $version from pip's configured indexes, on Linux x86_64 PyPI's CUDA build (several GB)" >&2
exec "$venv/bin/pip" install -q "torch==$version"
