"""What a small real `tewatch run` costs before its case does anything: wall and CPU seconds per phase.

A CPU run of one cheap case (`--profile ci --backends torch-ref`, real asv), N times, each in a fresh
interpreter that calls `run_suite` as `tewatch run` does. Phases:

- probe: `python -m benchmarks.harness.probe` (torch, TE, the GPU);
- asv machine: `asv machine --yes`;
- discovery: `asv run` until its first case line: asv's start and its discovery process;
- cases: the rest of `asv run`: the fork server (its preload and import of the suites) and the cases;
- tewatch: the runner's own share (its import, re-filing the results, the records), the total less the above.

CPU seconds are the processes' user and system time, children's included (for discovery: what `asv run`
and the children it had waited for had spent at its first case line, from /proc).

With `--before REF` the same run is timed on a `git worktree` of REF too, alternating with this tree so
that both see the same load; the table then puts them side by side. With `--tiny` the project is the
bisection tests' small suite (tests/bisection/tinyrepo.py: one case that measures a package of its own,
no torch in the case) in place of this repository's suites. Run from the repository root:

    .venv/bin/python scripts/run_fixed_cost.py [-n N] [--bench REGEX] [--before REF] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PHASES = ("probe", "asv machine", "discovery", "cases", "tewatch", "total")
COMMIT = "0123456789abcdef0123456789abcdef01234567"

# runs in a fresh interpreter with the tree's code first on sys.path; prints one JSON object
DRIVER = r"""
import json, os, resource, sys, time, types
from pathlib import Path

t0 = time.monotonic()
from tewatch.runner import suite

project, results, python, bench = sys.argv[1:5]
TICKS = os.sysconf("SC_CLK_TCK")
phases = {}
procs = []


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(name, fn):
    def wrapper(*args, **kwargs):
        wall, cpu = time.monotonic(), children_cpu()
        try:
            return fn(*args, **kwargs)
        finally:
            w, c = phases.get(name, (0.0, 0.0))
            phases[name] = (w + time.monotonic() - wall, c + children_cpu() - cpu)
    return wrapper


class Recorded(suite.subprocess.Popen):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        procs.append((self, time.monotonic(), children_cpu()))


fake = types.SimpleNamespace(**vars(suite.subprocess))
fake.Popen = Recorded
suite.subprocess = fake
suite.probe = timed("probe", suite.probe)
suite._asv = timed("asv machine", suite._asv)
suite._asv_run = timed("asv run", suite._asv_run)
first = {}


def progress(percent, what):
    if not first and procs:
        proc, started, _ = procs[-1]
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        first["wall"] = time.monotonic() - started
        first["cpu"] = sum(int(f) for f in fields[11:15]) / TICKS  # utime stime cutime cstime


opts = suite.RunOptions(
    project=Path(project), profile="ci", backends=("torch-ref",), bench=bench, machine="fixed-cost",
    results_dir=Path(results), commit=os.environ["FIXED_COST_COMMIT"], python=python,
)
outcome = suite.run_suite(opts, progress)
total_wall = time.monotonic() - t0
own = resource.getrusage(resource.RUSAGE_SELF)
total_cpu = own.ru_utime + own.ru_stime + children_cpu()
run_wall, run_cpu = phases.pop("asv run")
phases["discovery"] = (first.get("wall", run_wall), first.get("cpu", run_cpu))
phases["cases"] = (run_wall - phases["discovery"][0], run_cpu - phases["discovery"][1])
phases["tewatch"] = (
    total_wall - sum(w for w, _ in phases.values()), total_cpu - sum(c for _, c in phases.values())
)
phases["total"] = (total_wall, total_cpu)
json.dump({"phases": phases, "counts": outcome.counts, "asv_exit": outcome.asv_exit_code}, sys.stdout)
"""


def tiny_project(tree: Path, where: Path) -> tuple[Path, str]:
    """The bisection tests' suite and package, made with `tree`'s tests/bisection/tinyrepo.py: (project,
    the python of an environment with the package installed)."""
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
        "from tests.bisection import tinyrepo as t; w = Path(sys.argv[2]);"
        "shas = t.make_repo(w / 'repo', [t.Change()]);"
        "print(t.make_base(w / 'base', w / 'repo', shas[0])); t.make_project(w / 'project')"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tree), str(where)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return where / "project", done.stdout.strip().splitlines()[-1]


def one_run(
    tree: Path, project: Path, python: str, bench: str, results: Path
) -> dict[str, tuple[float, float]]:
    env = dict(os.environ, FIXED_COST_COMMIT=COMMIT)
    env["PYTHONPATH"] = os.pathsep.join(str(tree / p) for p in ("service", "dashboards", "."))
    for name in ("TEWATCH_PROFILE", "TEWATCH_BACKENDS", "TEWATCH_PERTURB"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(project), str(results), python, bench],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"the run in {tree} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout)
    if out["asv_exit"] != 0 or set(out["counts"]) != {"pass"}:
        sys.exit(f"the run in {tree} did not pass its case: {out}")
    return {name: tuple(value) for name, value in out["phases"].items()}


def worktree(ref: str, where: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", "-q", str(where), ref],
        check=True,
    )
    return where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=3, help="runs per tree (default 3)")
    parser.add_argument("--bench", default=r"^contracts\.CpuRoundTrip\.", help="asv --bench of the one case")
    parser.add_argument("--before", metavar="REF", help="also time a worktree of REF, alternating")
    parser.add_argument("--tiny", action="store_true", help="the bisection tests' small suite instead")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="tewatch-fixed-cost-"))
    trees = {"after": REPO_ROOT} if args.before else {"this tree": REPO_ROOT}
    if args.before:
        trees = {"before": worktree(args.before, scratch / "before"), **trees}
    bench = r"^tiny\.Answer" if args.tiny else args.bench
    setups = {}
    for name, tree in trees.items():
        if args.tiny:
            setups[name] = tiny_project(tree, scratch / f"tiny-{name.replace(' ', '-')}")
        else:
            setups[name] = (tree, sys.executable)
    samples: dict[str, list[dict[str, tuple[float, float]]]] = {name: [] for name in trees}
    try:
        for round_ in range(args.n):  # alternated, so that both see the same load
            for name, tree in trees.items():
                project, python = setups[name]
                results = scratch / f"results-{name.replace(' ', '-')}-{round_}"
                samples[name].append(one_run(tree, project, python, bench, results))
                total = samples[name][-1]["total"]
                print(
                    f"  {name} run {round_ + 1}: {total[0]:.1f} s wall, {total[1]:.1f} s CPU", file=sys.stderr
                )
    finally:
        if args.before:
            subprocess.run(
                ["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(trees["before"])]
            )
    what = "the bisection tests' tiny.Answer" if args.tiny else bench
    print(
        f"`tewatch run --profile ci --backends torch-ref --bench {what}`: medians of {args.n} runs, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    header = "| phase |" + "".join(f" {n} wall s | {n} CPU s |" for n in trees)
    if args.before:
        header += " CPU after/before |"
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for phase in PHASES:
        row = f"| {phase} |"
        cpus = []
        for name in trees:
            wall = statistics.median(s[phase][0] for s in samples[name])
            cpu = statistics.median(s[phase][1] for s in samples[name])
            cpus.append(cpu)
            row += f" {wall:.2f} | {cpu:.2f} |"
        if args.before:
            row += f" {cpus[1] / cpus[0]:.2f} |" if cpus[0] > 0.05 else " |"
        print(row)


if __name__ == "__main__":
    main()
