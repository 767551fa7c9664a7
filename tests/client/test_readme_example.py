"""The README's pandas example, run as written against a real server with the bundled H200 history (as
`tewatch demo` loads it): it answers what the README says, and draws the plot docs/ keeps."""

from __future__ import annotations

import contextlib
import io
import re

import matplotlib
import pytest

from tests.conftest import REPO_ROOT

README = REPO_ROOT / "README.md"
PLOT = "docs/compiled-eager-ratio.png"
MARKER = "<!-- this block runs in tests/client/test_readme_example.py"


def readme_example() -> str:
    text = README.read_text()
    after = text[text.index(MARKER) :]
    return re.search(r"```python\n(.*?)```", after, re.S).group(1)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.fixture
def ran(history, tmp_path, monkeypatch) -> dict:
    code = readme_example()
    assert "http://127.0.0.1:8000" in code and PLOT in code
    matplotlib.use("Agg")
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme_example"}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code.replace("http://127.0.0.1:8000", history.url), str(README), "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
    namespace["printed"] = printed.getvalue()
    namespace["plot"] = (tmp_path / PLOT).read_bytes()
    return namespace


def test_the_example_answers_what_the_readme_says(ran):
    ratio = ran["ratio"]
    assert list(ratio.index.names) == ["recipe", "rank"]
    assert set(ratio.columns) == {"default", "reduce-overhead", "max-autotune"}
    at = lambda recipe, rank, mode: round(float(ratio.loc[(recipe, rank), mode]), 2)  # noqa: E731
    bf16 = ratio.loc["bf16"].to_numpy(float).round(2)
    assert bf16.min() == 0.94 and bf16.max() == 1.05  # "0.94 to 1.05 in every mode and rank"
    assert sorted(at("fp8-block", rank, "default") for rank in (2, 3, 4)) == [1.17, 1.22, 1.22]
    assert {at("torch-ref", rank, "default") for rank in (2, 3, 4)} == {0.86}
    reference = ratio.loc["nvfp4-ref"]
    assert list(reference.index) == [2, 3] and set(reference.to_numpy(float).round(2).ravel()) <= {0.99, 1.0}
    others = ratio.drop(index=["bf16", "torch-ref", "nvfp4-ref"], level="recipe").copy()
    others.loc["fp8-block", "default"] = float("nan")
    assert ((others - 1).abs().max().max()) == pytest.approx(0.25, abs=0.005)  # "up to 25 % either way"
    status = ran["status"]
    assert {
        status[("nvfp4-ref", 4, mode)] for mode in ("eager", "default", "reduce-overhead", "max-autotune")
    } == {"error"}
    assert ran["recipes"] == ["bf16", "fp8-block", "fp8-current", "fp8-delayed", "nvfp4-ref", "torch-ref"]
    assert "fp8-block" in ran["printed"] and "1.22" in ran["printed"]


def test_the_example_draws_the_plot_docs_keeps(ran):
    kept = (REPO_ROOT / PLOT).read_bytes()
    assert len(kept) < 100_000 and len(ran["plot"]) < 100_000
    assert png_size(ran["plot"]) == png_size(kept) == (810, 288)
