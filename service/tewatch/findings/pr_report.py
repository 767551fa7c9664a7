"""What a pull request's run finds against its merge base, defined once: the `pr.report` webhook payload
is this model dumped (its JSON schema generated from it, docs/pr-report.md), and the Markdown comment,
GitHub's commit status and the `/pr/{n}` page render it.

A section is a list field of rows on `PrReport` and its entry in SECTIONS; each row type says its cells
(tewatch.findings.table), so the Markdown and the page render a new section without knowing it, and what
it counts for in the headline (`Row.finding`: a failure, a note or nothing; tewatch.findings.headline), so
no section's failure goes unsaid."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tewatch.findings.table import Cell, Section

MIB = 2**20
KERNEL_SET_FINDINGS = ("kernel set", "graph breaks")
KernelWhat = Literal["kernel set", "graph breaks", "compile time", "attribution", "suspect speed-up"]


@dataclass(frozen=True)
class Finding:
    """What a row of a section the pull request changed counts for in the report's headline. `failure`:
    the pull request breaks something, and the commit status fails; `note`: the headline says so, the
    status does not fail. `key` names the count (one per kind), `one` and `many` how the headline words it."""

    key: str
    weight: Literal["failure", "note"]
    one: str
    many: str


NEW_FAILURE = Finding("new-failures", "failure", "correctness failure", "correctness failures")
FIXED = Finding("fixed", "note", "fixed", "fixed")
LEAK = Finding("leaks", "failure", "leaking case", "leaking cases")
DRIFT = Finding("drift", "note", "error metric drifting", "error metrics drifting")
KERNEL_SET = Finding("kernel-sets", "note", "kernel-set change", "kernel-set changes")
NEW_GRAPH_BREAKS = Finding(
    "graph-breaks", "failure", "case with new graph breaks", "cases with new graph breaks"
)
DIVERGED = Finding("divergences", "failure", "training case diverging", "training cases diverging")
INCOMPARABLE = Finding(
    "incomparable", "note", "training case not comparable", "training cases not comparable"
)


class Row(BaseModel, ABC):
    model_config = ConfigDict(frozen=True)

    @abstractmethod
    def cells(self, pr_number: int) -> tuple[Cell, ...]: ...

    @abstractmethod
    def finding(self) -> Finding | None:
        """What the row counts for in the headline where its section is one the pull request changed;
        None: the section shows it and the headline does not count it."""


def _failure_cells(
    case: str, case_id: int | None, previous: str, status: str, detail: str
) -> tuple[Cell, ...]:
    link = f"/case/{case_id}" if case_id is not None else None
    return (
        Cell("case", case, link=link),
        Cell("previous", previous),
        Cell("status", status),
        Cell("detail", detail),
    )


class CaseFailure(Row):
    """A case failing on the head: new when it passed on the merge base (or the base lacks it), known when
    it did not pass there either."""

    case: str = Field(description="the case and its parameters, `name(key=value, ...)`")
    case_id: int | None = None
    previous: str = Field("", description='its verdict on the merge base, "" when the base has no such case')
    status: str = Field(description="its verdict on the head: fail_accuracy, error, timeout or oom")
    detail: str = Field(description="what it failed with: the check, exception and message, or the metric")

    def cells(self, pr_number: int) -> tuple[Cell, ...]:
        return _failure_cells(self.case, self.case_id, self.previous, self.status, self.detail)

    def finding(self) -> Finding:
        """A NaN or infinite loss and a failed graph capture are failing verdicts too (docs/records.md)."""
        return NEW_FAILURE


class CaseFixed(Row):
    """A case failing on the merge base and passing on the head."""

    case: str
    case_id: int | None = None
    gpu_model: str = ""
    previous: str = Field(
        description="its failing verdict on the merge base: fail_accuracy, error, timeout, oom"
    )
    previous_detail: str = Field(description="what it failed with there")
    check: str | None = None
    exception_class: str | None = None
    message: str | None = None
    metric: str | None = None
    value: float | None = None
    tolerance: float | None = None
    base_run_id: int | None = Field(None, description="the merge base's run it failed in")
    status: str = "pass"
    open_alert_ids: list[int] = Field(
        default_factory=list,
        description="correctness alerts still open for it on the merge base's branches: merging resolves them",
    )
    links: dict[str, str] = Field(default_factory=dict, description="`case`: the case's dashboard page")

    def cells(self, pr_number: int) -> tuple[Cell, ...]:
        return _failure_cells(self.case, self.case_id, self.previous, self.status, self.previous_detail)

    def finding(self) -> Finding:
        return FIXED


class TimingChange(Row):
    """A series whose samples moved beyond the minimum effect, significantly after FDR control."""

    benchmark: str = Field(description="the series: benchmark, metric and parameters")
    unit: str
    baseline: float | None = Field(description="the merge base's typical value")
    head: float | None = Field(description="the head's typical value")
    effect: float | None = Field(description="relative change, head against base (0.1: 10 % more)")
    ci_low: float | None = None
    ci_high: float | None = None
    series_id: int | None = None

    def cells(self, pr_number: int) -> tuple[Cell, ...]:
        link = f"/series/{self.series_id}?pr={pr_number}" if self.series_id is not None else None
        return (
            Cell("case", self.benchmark, link=link),
            Cell("value", numbers=(self.baseline,), unit=self.unit),
            Cell("value", numbers=(self.head,), unit=self.unit),
            Cell("change", numbers=(self.effect,)),
            Cell("interval", numbers=(self.ci_low, self.ci_high)),
        )

    def finding(self) -> None:
        """Timings are counted by case, in `case_counts` (regression, improvement, suspect, ...)."""
        return None


def _series_link(series_id: int | None, pr_number: int) -> str | None:
    return f"/series/{series_id}?pr={pr_number}" if series_id is not None else None


class MemoryChange(Row):
    """A case whose bytes the head changed beyond the noise of identical code (its largest change), or
    whose training steps leak on the head (a leak fails the case's memory check)."""

    benchmark: str = Field(description="the series: case, metric and parameters")
    case_id: int | None = None
    series_id: int | None = None
    verdict: str = Field(
        description="regression (more bytes), improvement (fewer), inconclusive (within the noise), "
        "or leak (a leak and no byte metric changed)"
    )
    base_bytes: float | None = None
    head_bytes: float | None = None
    change_bytes: float | None = Field(None, description="head - base")
    change_share: float | None = Field(None, description="change / base (0.1: 10 % more)")
    leak_bytes_per_step: float | None = Field(None, description="the case's fitted slope on the head")
    leak: bool = Field(False, description="the slope exceeds its noise: the case's memory check fails")
    other_changes: int = Field(0, description="the case's other byte metrics that changed")
    description: str = ""

    def cells(self, pr_number: int) -> tuple[Cell, ...]:
        def mib(value: float | None) -> float | None:
            return None if value is None else value / MIB

        slope = "" if self.leak_bytes_per_step is None else f"{self.leak_bytes_per_step / MIB:.2f} MiB/step"
        return (
            Cell("case", self.benchmark, link=_series_link(self.series_id, pr_number)),
            Cell("value", numbers=(mib(self.base_bytes),), unit="MiB"),
            Cell("value", numbers=(mib(self.head_bytes),), unit="MiB"),
            Cell("detail", "" if self.change_bytes is None else f"{self.change_bytes / MIB:+.1f} MiB"),
            Cell("change", numbers=(self.change_share,)),
            Cell("detail", ("leak " if self.leak else "") + slope),
            Cell("status", "leak" if self.leak else self.verdict),
        )

    def finding(self) -> Finding | None:
        """A leak fails the case's memory check; more or fewer bytes alone are reported, not counted."""
        return LEAK if self.leak else None


class NumericsChange(Row):
    """An error metric (max-abs, rel-L2, SQNR against a reference) the head moved beyond what identical
    code does: drift when worse, improvement when better; the case's verdict is reported apart."""

    benchmark: str
    case_id: int | None = None
    series_id: int | None = None
    metric: str = Field(description="the error in words: `rel-L2 of output vs fp32`")
    verdict: str = Field(
        description="drift (worse), improvement, or inconclusive (a metric identical code does not "
        "reproduce, its noise not learned yet: never counted as drift)"
    )
    base: float
    head: float
    change: float = Field(description="relative: head / base - 1 (head - base where base is 0)")
    tolerance: float | None = Field(None, description="the tolerance the case's check holds it to")
    description: str = Field(
        "", description="`rel-L2 of output vs fp32 0.0375 -> 0.0427, +13.7 %, tolerance 0.1`"
    )

    def cells(self, pr_number: int) -> tuple[Cell, ...]:
        return (
            Cell("case", self.benchmark, link=_series_link(self.series_id, pr_number)),
            Cell("detail", self.description),
            Cell("status", self.verdict),
        )

    def finding(self) -> Finding | None:
        """Drift is beyond the noise of identical code yet within the case's tolerance (beyond it, the
        case's verdict fails): a note."""
        return DRIFT if self.verdict == "drift" else None


class KernelFinding(Row):
    """What a case call runs, compared (tewatch.detect.kernels, docs/kernels.md): a kernel-set change, a
    graph break count that changed, a compile time that changed in A/B rounds, the kernels a changed
    timing is attributed to, or a speed-up reported as suspect."""

    benchmark: str = Field(description="the case, or the series, and its parameters")
    case_id: int | None = None
    series_id: int | None = None
    what: KernelWhat
    description: str = Field(
        description="`appeared: triton_poi_fused_mul (2 per call)`, `nvte_quantize_kernel +38 us of +41 us`"
    )
    change: float | None = Field(None, description="relative change of the timing it concerns, if one")
    verdict: str = Field(
        description="changed (kernel set), regression or improvement (graph breaks: more or fewer; compile "
        "time; the timing an attribution explains), suspect"
    )

    def cells(self, pr_number: int) -> tuple[Cell, ...]:
        link = _series_link(self.series_id, pr_number)
        if link is None and self.case_id is not None:
            link = f"/case/{self.case_id}"
        return (
            Cell("case", self.benchmark, link=link),
            Cell("detail", self.what),
            Cell("detail", self.description),
            Cell("change", numbers=(self.change,)),
            Cell("status", self.verdict),
        )

    def finding(self) -> Finding | None:
        """A new graph break fails; a changed kernel set is a note (a pull request may mean to change its
        kernels, and a speed-up that comes with it is suspect). Suspect speed-ups are counted with the
        timings (`case_counts`' suspect); compile times too, attributions explain them."""
        if self.what == "kernel set":
            return KERNEL_SET
        if self.what == "graph breaks" and self.verdict == "regression":
            return NEW_GRAPH_BREAKS
        return None


class TrainingCase(Row):
    """A training case of the head run: its step time and peak memory, its loss trajectory against its
    reference in the same run (bf16 eager for a recipe, eager for compiled or graphed) and against the
    same case on the merge base (docs/training-report.md)."""

    benchmark: str = Field(description="the case and its parameters")
    case_id: int
    run_id: int = Field(description="the head run")
    recipe: str = ""
    execution: str = ""
    step_seconds: float | None = Field(
        None, description="one optimizer step on the head, its micro-batches included"
    )
    base_step_seconds: float | None = None
    peak_bytes: float | None = Field(None, description="peak allocated bytes on the head")
    reference: str = Field(
        "", description='what the run judges it against: "bf16 eager", "eager", "" for none'
    )
    verdict: str = Field(
        "", description='against the reference: equal, within (the band), diverged, incomparable; "" for none'
    )
    first_divergent_step: int | None = Field(None, description="the first step beyond the band (from 1)")
    description: str = ""
    base_verdict: str = Field("", description='head against the merge base, as `verdict`; "" without a base')
    base_first_divergent_step: int | None = None
    max_abs_difference: float | None = Field(None, description="the largest loss difference to the base")
    final_difference: float | None = Field(None, description="head - base, the final loss")
    base_description: str = ""

    @property
    def diverged(self) -> bool:
        return "diverged" in (self.verdict, self.base_verdict)

    def cells(self, pr_number: int) -> tuple[Cell, ...]:
        mib = None if self.peak_bytes is None else self.peak_bytes / MIB
        return (
            Cell("case", self.benchmark, link=f"/case/{self.case_id}?run={self.run_id}#training"),
            Cell("value", numbers=(self.step_seconds,), unit="seconds"),
            Cell("value", numbers=(mib,), unit="MiB"),
            Cell("detail", self.description or "no reference in the run"),
            Cell("status", self.verdict) if self.verdict else Cell("detail", "—"),
            Cell("detail", self.base_description or "not on the base"),
            Cell("status", self.base_verdict) if self.base_verdict else Cell("detail", "—"),
        )

    def finding(self) -> Finding | None:
        if self.diverged:
            return DIVERGED
        return INCOMPARABLE if "incomparable" in (self.verdict, self.base_verdict) else None


FAILURE_COLUMNS = ("case", "base", "head", "detail")
TIMING_COLUMNS = ("benchmark", "base", "head", "change", "95 % interval")

SECTIONS: tuple[Section, ...] = (
    Section("correctness", "Correctness", FAILURE_COLUMNS, "pr-failures"),
    Section(
        "fixed",
        "Fixed by this pull request",
        ("case", "base", "head", "it failed with"),
        "pr-fixed",
        lead="Failing on the merge base, passing here.",
    ),
    Section("regressions", "Largest regressions", TIMING_COLUMNS, "pr-regressions"),
    Section("improvements", "Improvements", TIMING_COLUMNS, "pr-improvements"),
    Section(
        "memory",
        "Memory",
        ("series", "base", "head", "change", "change %", "leak slope", "verdict"),
        "pr-memory",
        lead="A row per case: the change of its setup bytes (else its largest) beyond the noise of identical code (reported from "
        "1 MiB or 1 %) and its leak slope; a leak fails the case's memory check.",
    ),
    Section(
        "numerics",
        "Numerics",
        ("series", "error", "verdict"),
        "pr-numerics",
        lead="Error values that moved beyond what identical code does, then inconclusive moves of metrics "
        "it does not reproduce, whose noise no runs of identical code taught yet; the cases' verdicts are "
        "reported apart.",
    ),
    Section(
        "kernels",
        "Kernels",
        ("case", "what", "finding", "change", "verdict"),
        "pr-kernels",
        lead="What the calls run (docs/kernels.md): kernels that appeared or disappeared, launches, "
        "syncs and copies per call, graph breaks, compile time in A/B rounds; the kernels each changed "
        "timing is attributed to; speed-ups that change the kernels or beat the bytes-moved ceiling.",
    ),
    Section(
        "training",
        "Training",
        ("case", "step time", "peak memory", "in this run", "verdict", "against the base", "verdict"),
        "pr-training",
        lead="Each training case's loss trajectory against bf16 eager (a recipe) or eager (compiled, graphed) "
        "of the same run, and against the merge base, within a band learned from runs of identical code; "
        "each case links its overlay.",
    ),
    Section(
        "known_failures",
        "Known failures, also failing on the base",
        FAILURE_COLUMNS,
        "pr-known-failures",
        lead="These did not pass on the merge base either, so the report does not count them.",
        changed=False,
    ),
)


def _field(row: Any, name: str) -> Any:
    return row.get(name) if isinstance(row, dict) else getattr(row, name)


class ReportLinks(BaseModel):
    pr: str = Field(description="the pull request's dashboard page")
    alerts: str = Field(description="the open alerts")


class PrReport(BaseModel):
    """One head run of a pull request against its merge base's runs on the same machine (else the same
    GPU model)."""

    model_config = ConfigDict(frozen=True)

    pr_number: int
    repo: str = Field("", description='the repository the upload named, "" when it named none')
    head_sha: str
    base_sha: str = Field(description="the merge base the upload named")
    gpu_model: str
    machine: str = Field("", description="the head run's machine")
    te_version: str = Field("", description="Transformer Engine's version in the head run")
    base_te_version: str = Field("", description="Transformer Engine's version in the merge base's runs")
    run_id: int = Field(description="the head run")
    base_run_ids: list[int] = Field(
        description="the merge base's runs compared against; empty: the base has no runs on this machine "
        "or GPU model, and every timing is inconclusive"
    )
    rounds: int | None = Field(None, description="A/B rounds paired, where both sides were measured so")
    counts: dict[str, int] = Field(
        default_factory=dict,
        description="verdict -> number of series compared; `suspect`: a speed-up the Kernels section "
        "reports as suspect, never counted as an improvement",
    )
    case_counts: dict[str, int] = Field(
        default_factory=dict,
        description="verdict -> cases (a case's timings: a regression, else a suspect speed-up, else an "
        "improvement decides, else its steadier timing)",
    )
    correctness: list[CaseFailure] = Field(default_factory=list, description="new correctness failures")
    fixed: list[CaseFixed] = Field(default_factory=list)
    regressions: list[TimingChange] = Field(default_factory=list, description="largest first")
    improvements: list[TimingChange] = Field(default_factory=list, description="largest first")
    memory: list[MemoryChange] = Field(
        default_factory=list, description="a row per case, largest change first"
    )
    numerics: list[NumericsChange] = Field(default_factory=list, description="drift first, largest first")
    kernels: list[KernelFinding] = Field(
        default_factory=list,
        description="kernel-set changes and graph breaks first, then compile time, "
        "suspect speed-ups and attributions",
    )
    training: list[TrainingCase] = Field(default_factory=list, description="diverged first")
    known_failures: list[CaseFailure] = Field(default_factory=list)
    correctness_failures: int = Field(0, description="how many new correctness failures")
    memory_failures: int = Field(0, description="how many cases leak on the head: their memory check fails")
    numerics_drift: int = Field(0, description="how many error metrics drifted (got worse)")
    kernel_changes: int = Field(0, description="how many kernel-set and graph break changes")
    training_divergences: int = Field(
        0, description="how many training cases' loss left the band (of their reference or of the base)"
    )
    min_effect: float = 0.03
    alpha: float = Field(0.05, description="the false discovery rate (Benjamini-Hochberg)")
    detector_version: str = ""
    public_url: str = Field("", description="the dashboard's address the links start with")
    links: ReportLinks = Field(default_factory=lambda: ReportLinks(pr="", alerts=""))

    @model_validator(mode="before")
    @classmethod
    def _derived(cls, data: Any) -> Any:
        """The failures' count and the links, where the data does not carry them (as built, not parsed)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        data.setdefault("correctness_failures", len(data.get("correctness") or []))
        data.setdefault("memory_failures", sum(1 for row in data.get("memory") or [] if _field(row, "leak")))
        data.setdefault(
            "numerics_drift",
            sum(1 for row in data.get("numerics") or [] if _field(row, "verdict") == "drift"),
        )
        data.setdefault(
            "kernel_changes",
            sum(1 for row in data.get("kernels") or [] if _field(row, "what") in KERNEL_SET_FINDINGS),
        )
        data.setdefault(
            "training_divergences",
            sum(
                1
                for row in data.get("training") or []
                if "diverged" in (_field(row, "verdict"), _field(row, "base_verdict"))
            ),
        )
        if "links" not in data:
            base_url = str(data.get("public_url") or "").rstrip("/")
            data["links"] = {"pr": f"{base_url}/pr/{data.get('pr_number')}", "alerts": f"{base_url}/alerts"}
        return data

    @property
    def base_has_runs(self) -> bool:
        return bool(self.base_run_ids)

    def rows(self, section: Section) -> list[Row]:
        return getattr(self, section.field)


class PrReportPayload(PrReport):
    """The `data` of a `pr.report` webhook event: the report and its Markdown."""

    markdown: str = Field(description="the report as a pull-request comment")

    @classmethod
    def of(cls, report: PrReport, markdown: str) -> PrReportPayload:
        return cls(**dict(report), markdown=markdown)


def payload_schema() -> str:
    """The JSON schema of the `pr.report` payload, as docs/pr-report.md shows it."""
    return json.dumps(PrReportPayload.model_json_schema(mode="serialization"), indent=1, sort_keys=True)
