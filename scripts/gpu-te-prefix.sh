#!/usr/bin/env bash
# On a lent GPU machine: install the wheels of one folder (a TE release's three wheels, or the packages
# TE's Python side needs) into a prefix of its own, so that releases sit side by side and a run picks one
# with PYTHONPATH. One pip call per prefix: TE's wheels share the transformer_engine/ folder.
#   bash scripts/gpu-te-prefix.sh .te-2.19.0 /opt/te/2.19.0
set -euo pipefail
src=$1 prefix=$2
[[ -f $prefix/.installed ]] && exit 0
python3 -m pip install -q --no-index --no-deps --no-compile --target "$prefix" "$src"/*.whl
touch "$prefix/.installed"
echo "installed $(ls "$src" | tr '\n' ' ')into $prefix"
