"""Hostile inputs for property-based tests: where in a valid upload to put them, and what to put there.

A site is one place in the upload format (a field of one file, or a form field); a kind is one sort of
hostile value (a huge integer, a non-finite number, an out-of-range date, deep nesting, a lone surrogate,
a NUL, text longer than its column). Values are raw JSON text, so they can be what json.dumps never
writes: `NaN`, `Infinity`, integers of thousands of digits, `"\\ud800"`, 3,000 levels of brackets.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

SENTINEL = "@@hostile@@"
Edit = Callable[[dict], None]


@dataclass(frozen=True)
class Site:
    name: str
    part: str  # result, machine, benchmarks, run, cases, both (result + benchmarks) or form
    edit: Edit | None = None  # puts SENTINEL where the hostile value goes
    index: int = 0  # which case record
    form_field: str = ""

    def __repr__(self) -> str:  # what hypothesis prints for a failing example
        return f"Site({self.name})"


def _column(name: str, benchmark: str = "ops.Scale.time_scale", combo: int | None = 0) -> Edit:
    """A cell of a results row; a per-combination column's first entry unless combo is None."""

    def edit(data: dict) -> None:
        row = data["results"][benchmark]
        index = data["result_columns"].index(name)
        row.extend([None] * (index + 1 - len(row)))
        if combo is None:
            row[index] = SENTINEL
        elif name == "samples":
            row[index][combo][0] = SENTINEL
        else:
            row[index][combo] = SENTINEL

    return edit


def _at(*path: Any) -> Edit:
    def edit(data: dict) -> None:
        for key in path[:-1]:
            data = data.setdefault(key, {})
        data[path[-1]] = SENTINEL

    return edit


def _param_repr(data: dict) -> None:
    data["results"]["ops.Compile.track_seconds"][1][0][0] = SENTINEL


def _rename_benchmark(data: dict) -> None:
    """Both files name the benchmark: applied to the results file and to benchmarks.json."""
    table = data.get("results", data)
    table[SENTINEL] = table.pop("ops.track_share")


def form_site(name: str) -> Site:
    return Site(f"form.{name}", "form", form_field=name)


NUMBER_SITES = [
    Site("result.value", "result", _column("result")),
    Site("result.value(no stats)", "result", _column("result", "ops.track_share")),
    Site("result.duration", "result", _column("duration", combo=None)),
    Site("result.stats_ci_99_a", "result", _column("stats_ci_99_a")),
    Site("result.stats_q_25", "result", _column("stats_q_25")),
    Site("result.stats_number", "result", _column("stats_number")),
    Site("result.stats_repeat", "result", _column("stats_repeat")),
    Site("result.samples", "result", _column("samples")),
    Site("machine.gpu_count", "machine", _at("gpu_count")),
    Site("machine.gpu_memory_mb", "machine", _at("gpu_memory_mb")),
    Site("run.gpu.count", "run", _at("gpu", "count")),
    Site("run.gpu.l2_bytes", "run", _at("gpu", "l2_bytes")),
    Site("run.asv_exit_code", "run", _at("asv_exit_code")),
    Site("run.wall_seconds", "run", _at("wall_seconds")),
    Site("run.capabilities", "run", _at("capabilities", "nvfp4")),
    Site("run.gpu_state_before.power_w", "run", _at("gpu_state_before", "power_w")),
    Site("case.params", "cases", _at("params", "shape")),
    Site("case.labels.rank", "cases", _at("labels", "rank")),
    Site("case.labels.world_size", "cases", _at("labels", "world_size")),
    Site("case.verdict.value", "cases", _at("verdict", "value")),
    Site("case.verdict.details", "cases", _at("verdict", "details", "max_err")),
    Site("case.metric", "cases", _at("metrics", "tflops", "value"), index=2),
]
MS_DATE_SITES = [
    Site("result.date", "result", _at("date")),
    Site("result.started_at", "result", _column("started_at", combo=None)),
]
ISO_DATE_SITES = [
    Site("run.started_at", "run", _at("started_at")),
    Site("run.finished_at", "run", _at("finished_at")),
    Site("case.recorded_at", "cases", _at("recorded_at")),
]
TEXT_SITES = [
    Site("benchmark name", "both", _rename_benchmark),
    Site("result.param_repr", "result", _param_repr),
    Site("result.commit_hash", "result", _at("commit_hash")),
    Site("result.env_name", "result", _at("env_name")),
    Site("result.version", "result", _column("version", combo=None)),
    Site("benchmarks.unit", "benchmarks", _at("ops.Scale.time_scale", "unit")),
    Site("machine.machine", "machine", _at("machine")),
    Site("machine.cpu", "machine", _at("cpu")),
    Site("machine.gpu_model", "machine", _at("gpu_model")),
    Site("machine.compute_capability", "machine", _at("compute_capability")),
    Site("machine.extra", "machine", _at("hostname")),
    Site("run.profile", "run", _at("profile")),
    Site("run.versions.torch", "run", _at("versions", "torch")),
    Site("run.gpu.model", "run", _at("gpu", "model")),
    Site("run.backend_filter", "run", _at("backend_filter")),
    Site("case.case", "cases", _at("case")),
    Site("case.params", "cases", _at("params", "mode")),
    Site("case.labels.backend", "cases", _at("labels", "backend")),
    Site("case.labels.extra", "cases", _at("labels", "op")),
    Site("case.verdict.check", "cases", _at("verdict", "check")),
    Site("case.verdict.exception_class", "cases", _at("verdict", "exception_class")),
    Site("case.verdict.message", "cases", _at("verdict", "message")),
    Site("case.metric.unit", "cases", _at("metrics", "tflops", "unit"), index=2),
]
TEXT_FORM_SITES = [form_site("branch"), form_site("repo"), form_site("merge_base_sha")]
# anything may be nested: these take a value of any shape
NESTING_SITES = [
    Site("result.env_vars", "result", _at("env_vars")),
    Site("result.value", "result", _column("result")),
    Site("benchmarks.entry", "benchmarks", _at("ops.Scale.time_scale", "unit")),
    Site("machine.cpu", "machine", _at("cpu")),
    Site("run.capabilities", "run", _at("capabilities", "nvfp4")),
    Site("case.params", "cases", _at("params", "shape")),
    Site("case.verdict.details", "cases", _at("verdict", "details", "max_err")),
    Site("case.labels", "cases", _at("labels")),
]


def json_text(text: str) -> str:
    return json.dumps(text)


# ----------------------------------------------------------------------------------------------- values
def huge_ints() -> st.SearchStrategy[str]:
    """Past 32 bits, past 64 bits, past a float, past what Python converts from text (4300 digits)."""
    return st.one_of(
        st.integers(2**31, 2**63 - 1),
        st.integers(2**63, 2**90),
        st.integers(-(2**90), -(2**63) - 1),
        st.sampled_from([2**31, 2**63, 2**64, -(2**63) - 1, -(2**31) - 1]),
        st.integers(309, 4400).map(lambda digits: "9" * digits),
    ).map(str)


def non_finite() -> st.SearchStrategy[str]:
    return st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e400", "-0.5e310"])


def ms_dates() -> st.SearchStrategy[str]:
    """asv's milliseconds since the epoch: out of datetime's range, before 1970, NaN, infinite."""
    return st.one_of(
        st.sampled_from(["NaN", "Infinity", "-Infinity", "1e20", "-1e15", "1e300", "-1", "253402300800000"]),
        st.floats(1e14, 1e300).map(repr),
        st.floats(-1e300, -1.0).map(repr),
        st.integers(2**63, 2**70).map(str),
    )


def iso_dates() -> st.SearchStrategy[str]:
    """ISO 8601 times at datetime's edges (year 1, 9999) with offsets that push them past, or far out."""
    years = st.one_of(st.sampled_from([1, 2, 1969, 3000, 9998, 9999]), st.integers(1, 9999))
    offsets = st.sampled_from(["Z", "+00:00", "+05:00", "-05:00", "+23:59", "-23:59", ""])
    stamp = st.builds(
        lambda y, mo, d, h, off: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:59:59{off}",
        years, st.integers(1, 12), st.integers(1, 28), st.sampled_from([0, 23]), offsets,
    )  # fmt: skip
    return st.one_of(stamp.map(json_text), st.sampled_from(["1e300", "-1e300", "NaN", str(2**64)]))


def deep() -> st.SearchStrategy[str]:
    """Nesting from about pydantic-core's limit (200) to past the json module's (about 1000)."""

    def nested(depth: int, shape: str) -> str:
        return "[" * depth + "]" * depth if shape == "list" else '{"a":' * depth + "1" + "}" * depth

    return st.builds(nested, st.integers(150, 3500), st.sampled_from(["list", "dict"]))


def _text_with(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """JSON string text with `inner` (already escaped) somewhere in it."""
    plain = st.text(alphabet="abcXYZ._- ", max_size=8)
    return st.builds(lambda a, x, b: f'"{a}{x}{b}"', plain, inner, plain)


def surrogates() -> st.SearchStrategy[str]:
    lone = st.integers(0xD800, 0xDFFF).map(lambda code: f"\\u{code:04x}")
    reversed_pair = st.just("\\udc00\\ud800")
    return _text_with(st.one_of(lone, reversed_pair))


def nuls() -> st.SearchStrategy[str]:
    return _text_with(st.sampled_from(["\\u0000", "\\u0000\\u0000", "x\\u0000"]))


def long_texts() -> st.SearchStrategy[str]:
    return st.integers(17, 3000).map(lambda n: json_text("x" * n))


def wrapped() -> st.SearchStrategy[str]:
    """Non-finite numbers, huge integers, lone surrogates and NULs inside an array or an object."""
    inner = st.one_of(non_finite(), huge_ints(), surrogates(), nuls())
    return st.one_of(inner.map(lambda v: f"[1, {v}]"), inner.map(lambda v: f'{{"k": {v}}}'))


def form_texts(kind: str) -> st.SearchStrategy[str]:
    """The same kinds as form field values (multipart text: a real NUL, not an escape)."""
    if kind == "nul":
        return st.builds(lambda a, b: f"{a}\x00{b}", st.text("ab", max_size=4), st.text("ab", max_size=4))
    return st.integers(65, 3000).map(lambda n: "b" * n)


def form_ints() -> st.SearchStrategy[str]:
    return st.one_of(huge_ints(), st.sampled_from(["-1", "0", "1e3", "²", "٣", " 7 ", "7" * 5000]))


def form_dates() -> st.SearchStrategy[str]:
    return iso_dates().map(lambda text: json.loads(text) if text.startswith('"') else text)
