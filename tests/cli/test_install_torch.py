"""scripts/install-torch.sh with real pip against local package indexes (PEP 503 simple pages): PyTorch's CPU
index served over HTTP, and a stand-in for PyPI as pip's configured index. The wheels are tiny packages
named torch, so what gets installed shows which index it came from."""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import subprocess
import threading
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, free_port

SCRIPT = REPO_ROOT / "scripts" / "install-torch.sh"


def build_wheel(folder: Path, version: str) -> Path:
    """A pure-Python wheel of a package named torch whose __init__ says which version it is."""
    dist_info = f"torch-{version}.dist-info"
    files = {
        "torch/__init__.py": f"__version__ = {version!r}\n",
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{dist_info}/RECORD"] = "\n".join([*record, f"{dist_info}/RECORD,,"]) + "\n"
    path = folder / f"torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)
    return path


def simple_index(root: Path, *versions: str) -> Path:
    """A PEP 503 index under root: root/torch/index.html linking one wheel per version."""
    project = root / "torch"
    project.mkdir(parents=True)
    wheels = [build_wheel(project, version) for version in versions]
    links = "".join(f'<a href="{wheel.name}">{wheel.name}</a>\n' for wheel in wheels)
    (project / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    return root


@pytest.fixture
def cpu_index(tmp_path) -> Iterator[str]:
    root = simple_index(tmp_path / "cpu-index", "2.13.0+cpu")
    handler = lambda *args: http.server.SimpleHTTPRequestHandler(*args, directory=str(root))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def target_venv(tmp_path) -> Path:
    path = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(path)
    return path


def install(venv_dir: Path, cpu_index: str, configured_index: Path) -> subprocess.CompletedProcess:
    # pip reads only what is given here: no configuration file, no find-links, no cache
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(
        PIP_CONFIG_FILE=os.devnull,
        PIP_INDEX_URL=configured_index.as_uri(),
        PIP_NO_CACHE_DIR="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        TEWATCH_TORCH_CPU_INDEX=cpu_index,
    )
    return subprocess.run(
        ["bash", str(SCRIPT), str(venv_dir)], capture_output=True, text=True, timeout=300, env=env
    )


def installed_torch(venv_dir: Path) -> str:
    done = subprocess.run(
        [str(venv_dir / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_cpu_build_comes_from_pytorch_s_cpu_index_where_it_answers(tmp_path, cpu_index, target_venv):
    pypi = simple_index(tmp_path / "pypi", "2.13.0")
    done = install(target_venv, cpu_index, pypi)
    assert done.returncode == 0, done.stderr
    assert f"torch 2.13.0, the CPU build, from {cpu_index}" in done.stdout
    assert installed_torch(target_venv) == "2.13.0+cpu"


def test_without_the_cpu_index_a_cpu_build_in_pip_s_indexes_is_taken(tmp_path, target_venv):
    mirror = simple_index(tmp_path / "mirror", "2.13.0", "2.13.0+cpu")
    done = install(target_venv, f"http://127.0.0.1:{free_port()}", mirror)
    assert done.returncode == 0, done.stderr
    assert "PyTorch's CPU wheel index cannot be reached" in done.stdout
    assert "torch 2.13.0+cpu, the CPU build, from pip's configured indexes" in done.stdout
    assert installed_torch(target_venv) == "2.13.0+cpu"


def test_with_neither_it_installs_pypi_s_torch_and_says_that_it_is_the_cuda_build(tmp_path, target_venv):
    pypi = simple_index(tmp_path / "pypi", "2.13.0")
    done = install(target_venv, f"http://127.0.0.1:{free_port()}", pypi)
    assert done.returncode == 0, done.stderr
    assert "no torch 2.13.0+cpu there either" in done.stderr and "CUDA build (several GB)" in done.stderr
    assert installed_torch(target_venv) == "2.13.0"


def test_a_torch_found_nowhere_fails_the_script(tmp_path, target_venv):
    empty = tmp_path / "empty"
    empty.mkdir()
    done = install(target_venv, f"http://127.0.0.1:{free_port()}", empty)
    assert done.returncode != 0
    assert "torch==2.13.0" in done.stderr
