"""A git history of an installed package's Python files in which one commit makes a function about 5 %
slower: what a performance bisection is proven on (docs/bisect.md, tests/fixtures/h200-bisect-slowdown).

    python scripts/slowdown_history.py --package-dir SITE/transformer_engine --repo /tmp/slow-history

Commit 0 holds the package as installed, binaries left out (an overlay links them from the installed
package). Each later commit adds a comment line to one of the package's modules, which changes nothing a
call does, except commit `--slow-at`: it copies benchmarks/harness/perturb.py into the module's folder as
`_slower.py` and rebinds the function to `slower_by(...)` of it (perturbation `gemm-slower-5` for TE's
general_gemm): after its first calls of each input shape, which measure it, every call is followed by a
wait on the device (on a CPU, the host) of `--fraction` of its own time. Prints the first, the slow and
the last commit's hashes as `good`, `slow` and `bad`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path

PERTURB = Path(__file__).resolve().parents[1] / "benchmarks" / "harness" / "perturb.py"
BINARIES = ("*.so", "*.so.*")
SLOWER_MODULE = "_slower.py"


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_DATE": "2026-12-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-12-01T00:00:00Z",
        "GIT_AUTHOR_NAME": "tewatch",
        "GIT_AUTHOR_EMAIL": "tewatch@localhost",
        "GIT_COMMITTER_NAME": "tewatch",
        "GIT_COMMITTER_EMAIL": "tewatch@localhost",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


def copy_package(source: Path, target: Path) -> None:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", *BINARIES))


def modules_to_touch(package: Path, slow_module: str) -> list[Path]:
    """The modules of the slow module's top folder (TE's pytorch/) in a fixed order, the slow one left out:
    each harmless commit edits the next."""
    top = package / Path(slow_module).parts[0] if len(Path(slow_module).parts) > 1 else package
    return sorted(p for p in top.rglob("*.py") if p.name != "__init__.py" and p != package / slow_module)


def slow_down(package: Path, slow_module: str, function: str, fraction: float, name: str) -> None:
    module = package / slow_module
    shutil.copy(PERTURB, module.with_name(SLOWER_MODULE))
    with module.open("a") as out:
        out.write(
            f"\n\n# {function} takes {fraction:.0%} longer: after each call the device (a CPU: the host) waits "
            f"that share of the call's own time\n"
            f"from .{SLOWER_MODULE[:-3]} import slower_by as _slower_by  # noqa: E402\n\n"
            f"{function} = _slower_by({name!r}, {function}, {fraction!r})\n"
        )


def make_history(
    package_dir: Path,
    repo: Path,
    commits: int,
    slow_at: int,
    slow_module: str,
    function: str,
    fraction: float,
    name: str,
) -> list[str]:
    """The commits' hashes, oldest first."""
    if not 0 < slow_at < commits:
        raise SystemExit(f"--slow-at must lie between 1 and {commits - 1}")
    if not (package_dir / slow_module).is_file():
        raise SystemExit(f"{package_dir} has no {slow_module}")
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    package = repo / package_dir.name
    copy_package(package_dir, package)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{package_dir.name} as installed, binaries left out")
    shas = [git(repo, "rev-parse", "HEAD")]
    touched = modules_to_touch(package, slow_module)
    for number in range(1, commits):
        if number == slow_at:
            slow_down(package, slow_module, function, fraction, name)
            subject = f"{function} takes {fraction:.0%} longer ({name})"
        else:
            module = touched[number % len(touched)]
            with module.open("a") as out:
                out.write(f"\n# history step {number}: a comment, nothing a call does changes\n")
            subject = f"step {number}: a comment in {module.relative_to(repo)}"
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", subject)
        shas.append(git(repo, "rev-parse", "HEAD"))
    return shas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package-dir", type=Path, required=True, help="the installed package's folder")
    parser.add_argument("--repo", type=Path, required=True, help="where the history is made (must not exist)")
    parser.add_argument("--commits", type=int, default=17)
    parser.add_argument("--slow-at", type=int, default=11, help="the commit that slows the function down")
    parser.add_argument("--slow-module", default="pytorch/cpp_extensions/gemm.py", help="within the package")
    parser.add_argument("--function", default="general_gemm")
    parser.add_argument("--fraction", type=float, default=0.05)
    parser.add_argument("--name", default="gemm-slower-5", help="the perturbation's name in perturb.py")
    args = parser.parse_args()
    shas = make_history(
        args.package_dir.resolve(),
        args.repo,
        args.commits,
        args.slow_at,
        args.slow_module,
        args.function,
        args.fraction,
        args.name,
    )
    print(f"good {shas[0]}\nslow {shas[args.slow_at]}\nbad {shas[-1]}")


if __name__ == "__main__":
    main()
