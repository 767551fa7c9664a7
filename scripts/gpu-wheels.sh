#!/usr/bin/env bash
# gpu-wheels.sh [VENV]: fill .whl/ (git-ignored) with the Python 3.12 wheels a lent GPU machine's image
# lacks for scripts/gpu-env.sh: the service's and asv's packages, each at the version VENV (default
# .venv) has, so the device runs what the tests here ran. With IMAGE_PACKAGES=FILE (one installed
# package name a line, as the image lists them) it names every requirement of those wheels that neither
# the image nor .whl/ holds.
set -euo pipefail
venv=${1:-.venv}
missing_from_image=(fastapi starlette opentelemetry-api uvicorn httptools pydantic-settings python-dotenv
  sqlalchemy greenlet alembic mako psycopg psycopg-binary python-multipart orjson stamina tenacity anyio
  lazy-importer asv asv_runner json5 pympler importlib-metadata)
grep -qxF "/.whl/" .git/info/exclude 2>/dev/null || echo "/.whl/" >>.git/info/exclude
rm -rf .whl && mkdir -p .whl
specs=()
for name in "${missing_from_image[@]}"; do
  specs+=("$name==$("$venv/bin/python" -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "$name")")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${specs[@]}" 2>&1 \
  | grep -v "WARNING: Location" || true
du -sh .whl
[[ -n ${IMAGE_PACKAGES:-} ]] || exit 0
"$venv/bin/python" - "$IMAGE_PACKAGES" <<'PY'
import re, sys, zipfile
from pathlib import Path
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

image = {canonicalize_name(line.strip()) for line in open(sys.argv[1]) if line.strip()}
requires = {}
for wheel in [*Path(".whl").glob("*.whl"), *Path(".te").glob("*.whl")]:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    name = canonicalize_name(re.search(r"^Name: (.*)$", text, re.M).group(1))
    requires[name] = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Requires-Dist: ")]
device = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
          "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
          "platform_python_implementation": "CPython", "implementation_name": "cpython", "extra": ""}
for name, lines in sorted(requires.items()):
    for line in lines:
        need = Requirement(line)
        if (need.marker is None or need.marker.evaluate(device)) and canonicalize_name(need.name) not in image | set(requires):
            print(f"{name} needs {need.name}, which neither the image nor .whl/ holds")
PY
