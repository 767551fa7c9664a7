"""The general checks (benchmarks/checks.py) for real on CPU: every torch-ref case passes through a real
`asv run`, and each check fails when a perturbation breaks exactly its property; the CPU op sweep on a
quantized tensor whose `+ 0` recurses, as TE's did."""

import json
import subprocess
from pathlib import Path

import pytest
import torch
from torch.utils._pytree import tree_map

from benchmarks.harness.cpu_ops import cpu_op_checks
from tests.runner.test_run_ci_profile import _runner

pytestmark = pytest.mark.long_setup

BENCH = r"^checks\."
# under the perturbations, the cases whose verdicts say which check each one breaks, in two runs: every
# determinism case, the odd shapes padded silently and one on the grid under the quantizer's perturbations;
# both compile sequences and the compiled MLP under the compile perturbations
QUANTIZER_BENCH = (
    r"^checks\.Determinism\."
    r"|^checks\.OddShapes\.track_seconds\('(torch-ref', '(128x130|256x256)|torch-ref-2d', '100x256)'\)"
)
QUANTIZER_BREAKS = "torchref-nondeterministic,torchref-odd-shape-silent"
COMPILE_BENCH = (
    r"^checks\.CompileSequence\.|^checks\.CompiledLayer\.track_seconds\('torch-ref', 'LayerNormMLP'\)"
)
COMPILE_BREAKS = "torchref-compile-eval-path,torchref-compile-stale-weight"


def _verdicts(
    project: Path,
    home: Path,
    results: Path,
    perturb: str = "",
    bench: str = BENCH,
    inductor_cache: Path | None = None,
) -> dict[str, dict]:
    command, env = _runner(
        project,
        home,
        "--profile",
        "ci",
        "--backends",
        "torch-ref",
        "--bench",
        bench,
        "--machine",
        "ci-cpu",
        "--results-dir",
        str(results),
        "--commit",
        "c" * 40,
        inductor_cache=inductor_cache,
    )
    env["TEWATCH_PERTURB"] = perturb
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = {}
    for path in results.glob("ci-cpu/*.tewatch/cases/*.json"):
        record = json.loads(path.read_text())
        label = ", ".join(str(v) for v in record["params"].values())
        found[f"{record['case']}({label})"] = record
    return found


@pytest.fixture(scope="module")
def runs(project: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    inductor = tmp_path_factory.mktemp("inductor")
    plain = _verdicts(
        project, tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("plain"), inductor_cache=inductor
    )
    broken = _verdicts(
        project,
        tmp_path_factory.mktemp("home"),
        tmp_path_factory.mktemp("broken"),
        QUANTIZER_BREAKS,
        QUANTIZER_BENCH,
    )
    # the compile perturbations' run loads what the plain run compiled where its graphs are the same (the
    # cache's key is the graph's and the generated code's content) and compiles the graphs they change
    broken |= _verdicts(
        project,
        tmp_path_factory.mktemp("home"),
        tmp_path_factory.mktemp("broken-compiled"),
        COMPILE_BREAKS,
        COMPILE_BENCH,
        inductor_cache=inductor,
    )
    return plain, broken


def test_every_general_check_of_torch_ref_passes_and_says_what_it_refused(runs) -> None:
    plain, _ = runs
    # determinism x 3, odd shapes x 8, compile sequences x 2, compiled layers x 2
    assert len(plain) == 3 + 8 + 2 + 2
    refused_layer = plain.pop("checks.CompiledLayer(TransformerLayer, torch-ref)")["verdict"]
    assert refused_layer["status"] == "unsupported" and "LayerNormMLP only" in refused_layer["reason"]
    assert {r["verdict"]["status"] for r in plain.values()} == {"pass"}
    assert all(r.get("one_shot") for r in plain.values())
    refused = plain["checks.OddShapes(torch-ref, 128x130)"]["verdict"]["details"]["refused"]
    assert "multiple of 16" in refused
    steps = {
        c["check"]
        for c in [
            plain["checks.CompileSequence(torch-ref, train-eval-train)"]["verdict"],
            *plain["checks.CompileSequence(torch-ref, train-eval-train)"]["extra_checks"],
        ]
    }
    assert steps == {"compiled_vs_eager_train", "compiled_vs_eager_eval", "compiled_vs_eager_train_again"}


def test_each_check_fails_when_its_property_breaks(runs) -> None:
    _, broken = runs
    assert len(broken) == 3 + 3 + 2 + 1
    status = {name: r["verdict"]["status"] for name, r in broken.items()}
    assert {status[f"checks.Determinism({q})"] for q in ("torch-ref", "torch-ref-rht", "torch-ref-2d")} == {
        "fail_accuracy"
    }
    assert broken["checks.Determinism(torch-ref)"]["verdict"]["details"] == {"differing": ["data"]}
    # padded silently: a last dimension of 130, and 100 rows under 16x16 blocks
    assert status["checks.OddShapes(torch-ref, 128x130)"] == "fail_accuracy"
    assert status["checks.OddShapes(torch-ref-2d, 100x256)"] == "fail_accuracy"
    assert status["checks.OddShapes(torch-ref, 256x256)"] == "pass"
    failed = broken["checks.CompileSequence(torch-ref, train-eval-train)"]["verdict"]
    assert failed["status"] == "fail_accuracy" and failed["check"] == "compiled_vs_eager_eval"
    assert status["checks.CompileSequence(torch-ref, dynamic-sequence)"] == "pass"
    # the stale weight shows only after the update: the first step of the compiled layer is right
    layer = broken["checks.CompiledLayer(LayerNormMLP, torch-ref)"]
    assert layer["verdict"]["status"] == "fail_accuracy"
    assert layer["verdict"]["check"] == "compiled_vs_eager_after_update"
    assert {c["check"]: c["status"] for c in layer["extra_checks"]} == {"compiled_vs_eager_step": "pass"}


class RecursingOnAdd(torch.Tensor):
    """A quantized-looking CPU tensor whose `+ 0` dispatches to itself again, as TE 2.x's did."""

    @staticmethod
    def __new__(cls, inner: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(cls, inner.shape, dtype=inner.dtype, device=inner.device)

    def __init__(self, inner: torch.Tensor) -> None:
        self.inner = inner

    def dequantize(self) -> torch.Tensor:
        return self.inner

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.add.Tensor:
            return args[0] + args[1]
        unwrap = lambda a: a.inner if isinstance(a, RecursingOnAdd) else a  # noqa: E731
        return func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))


def test_the_cpu_op_sweep_names_the_op_that_recursed_and_passes_the_others() -> None:
    values = torch.randn(8, 16, dtype=torch.bfloat16)
    checks = {c.check: c for c in cpu_op_checks(RecursingOnAdd(values), values.float())}
    assert checks["cpu_add"].status == "error" and checks["cpu_add"].exception_class == "RecursionError"
    assert {name for name, c in checks.items() if c.status != "pass"} == {"cpu_add"}
    assert set(checks) == {
        f"cpu_{op}"
        for op in (
            "add",
            "mul",
            "clone",
            "equal",
            "assert_close",
            "to_float32",
            "reshape",
            "cat",
            "index",
            "dequantize",
        )
    }


def test_an_op_that_computes_the_wrong_values_fails_its_check() -> None:
    values = torch.randn(8, 16)
    wrong = values.clone()
    wrong[0, 0] += 1
    checks = {c.check: c for c in cpu_op_checks(values, wrong)}
    assert checks["cpu_index"].status == "fail_accuracy" and checks["cpu_equal"].status == "pass"
