# Sourced by the scripts/gpu-*.sh: a lent GPU machine without network, made ready for `tewatch run`.
#
# Here, once:   bash ../shared/gpu/prepare-te.sh     (fills .te/ with Transformer Engine 2.20.2)
#               bash scripts/gpu-wheels.sh           (fills .whl/: the Python 3.12 wheels of asv and the
#               service's packages that the image lacks, at this venv's versions; not virtualenv, which asv
#               imports only for environments it builds, nor TE's sdist fallback: with them the call's
#               working tree passes its 64 MiB)
# Device call:  carry [".te", ".whl"]; the command sources this file first.
# On an ordinary GPU runner none of this is needed: pip install "transformer_engine[pytorch]" and
# `pip install -e .[suites]` (docs/gpu-runners.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
# TE into the image's Python from .te/; runs of several releases use scripts/gpu-te-prefix.sh instead
if [[ -d .te ]]; then bash .te/install-te.sh || return 1; fi
python3 -m pip install -q --no-index --no-deps .whl/*.whl || return 1
# the packages from their source folders (service/tewatch, dashboards/tewatch_dashboards), without an install
export PYTHONPATH=$PWD/service:$PWD/dashboards:$PWD${PYTHONPATH:+:$PYTHONPATH}
# what the runner and a local `tewatch serve` import, now rather than minutes into a plan
python3 -c 'import asv, tewatch.api.app, tewatch.cli' || { echo ".whl/ lacks a package the service imports" >&2; return 1; }
# asv needs a git checkout to run in; the copied working tree may arrive without its .git
git rev-parse HEAD >/dev/null 2>&1 || { rm -rf .git; git init -q && git add -A \
  && git -c user.name=runner -c user.email=runner@localhost commit -qm "working tree"; }
mkdir -p .gpu-results
