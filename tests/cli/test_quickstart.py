"""scripts/quickstart.sh says what each step does while it runs: a line when a step starts, a line every few
seconds while a long one (pip) runs, and the time each took; run here with stand-ins for python3, pip and
tewatch, so nothing is installed (tests/cli/test_install_torch.py installs from local indexes)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO_ROOT

FAKE_PYTHON3 = """#!/usr/bin/env bash
# python3 -m venv .venv: a .venv whose pip takes a while and whose tewatch says what it was asked
mkdir -p "$3/bin"
cat > "$3/bin/pip" <<'PIP'
#!/usr/bin/env bash
echo "pip $*" >> pip.log
case "$*" in *torch*) sleep 2.5 ;; esac
[ -z "${FAIL_PIP:-}" ] || exit 3
PIP
printf '#!/usr/bin/env bash\\necho "tewatch $*"\\n' > "$3/bin/tewatch"
# the venv's python answers install-torch.sh's question "does PyTorch's CPU index answer?"
printf '#!/usr/bin/env bash\\ncat > /dev/null\\n[ -n "${CPU_INDEX_UP:-}" ]\\n' > "$3/bin/python"
chmod +x "$3/bin/pip" "$3/bin/tewatch" "$3/bin/python"
"""


def run_quickstart(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "scripts").mkdir()
    for script in ("quickstart.sh", "install-torch.sh"):
        shutil.copy(REPO_ROOT / "scripts" / script, tmp_path / "scripts" / script)
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON3)
    (bin_dir / "python3").chmod(0o755)
    return subprocess.run(
        ["bash", str(tmp_path / "scripts" / "quickstart.sh"), "--no-run-suites", "--port", "8123"],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "QUICKSTART_HEARTBEAT_S": "1",
            "CPU_INDEX_UP": "1",
            **env,
        },
    )


def test_every_step_says_when_it_starts_while_it_runs_and_how_long_it_took(tmp_path):
    done = run_quickstart(tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    starts = [line for line in lines if line.endswith(" ...")]
    assert starts == [
        "quickstart: creating .venv ...",
        "quickstart: installing torch 2.13.0, the CPU build (a large download on a first run) ...",
        "quickstart: installing tewatch, the suites' packages (asv, asv_runner, nvidia-ml-py) and pandas "
        "for tewatch.client ...",
    ]
    ends = [re.fullmatch(r"quickstart: (.*): done in (\d+) s", line) for line in lines]
    took = {m.group(1): int(m.group(2)) for m in ends if m}
    assert list(took) == [line.removeprefix("quickstart: ").removesuffix(" ...") for line in starts]
    assert took["installing torch 2.13.0, the CPU build (a large download on a first run)"] >= 2
    still = [line for line in lines if line.startswith("quickstart:   still installing torch")]
    assert still and re.search(r", \d+ s so far$", still[0]), "the slow pip step went silent"
    assert not [line for line in lines if "still" in line and "tewatch and" in line], (
        "a heartbeat outlived its step"
    )
    assert lines[-1] == "tewatch demo --no-run-suites --port 8123"
    assert (tmp_path / "pip.log").read_text().splitlines() == [
        "pip install -q --index-url https://download.pytorch.org/whl/cpu torch==2.13.0",
        "pip install -q -e .[suites,analysis]",
    ]


def test_without_pytorch_s_cpu_index_torch_comes_from_pip_s_indexes_and_it_says_so(tmp_path):
    done = run_quickstart(tmp_path, CPU_INDEX_UP="")
    assert done.returncode == 0, done.stderr
    assert "PyTorch's CPU wheel index cannot be reached" in done.stdout
    assert (tmp_path / "pip.log").read_text().splitlines() == [
        "pip install -q torch==2.13.0+cpu",
        "pip install -q -e .[suites,analysis]",
    ]


def test_a_failing_step_says_so_and_stops(tmp_path):
    done = run_quickstart(tmp_path, FAIL_PIP="1")
    assert done.returncode == 3
    assert re.search(r"quickstart: installing torch .* failed after \d+ s \(exit status 3\)", done.stderr)
    assert "tewatch demo" not in done.stdout
