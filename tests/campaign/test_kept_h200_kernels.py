"""The kept H200 kernel campaigns (tests/fixtures/h200-kernels-ab) judged by the pure rules of
tewatch.detect.kernels, without a server: the A/A arm runs what the base runs in every case; the head
perturbed with a host sync per call and a split kernel shows both by name; the head perturbed with a
graph break in te.Linear breaks compiled te.Linear's graph three more times."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.campaign.replay import FIXTURES
from tewatch.detect.kernels import ChangeKind, Kernel, KernelSetChange, KernelTable, kernel_set_changes
from tewatch.ingest.records import CaseRecord, parse_record

KEPT = FIXTURES / "h200-kernels-ab"
COMPILED_LINEAR = {
    "linear.LinearFwdBwd(mode=default, rank=2, recipe=bf16)",
    "linear.LinearFwdBwd(mode=default, rank=2, recipe=fp8-current)",
}
HOST_TE = {  # host cases of TE's modules (the torch-ref ones run the emulation: no sync added)
    "host.HostOverhead(op=layer, recipe=bf16, tokens=1)",
    "host.HostOverhead(op=layer, recipe=bf16, tokens=64)",
    "host.HostOverhead(op=layer, recipe=fp8-current, tokens=64)",
    "host.HostOverhead(op=linear, recipe=bf16, tokens=1)",
    "host.HostOverhead(op=linear, recipe=bf16, tokens=64)",
    "host.HostOverhead(op=linear, recipe=fp8-current, tokens=64)",
}
EAGER_LINEAR = {
    "linear.LinearFwdBwd(mode=eager, rank=2, recipe=bf16)",
    "linear.LinearFwdBwd(mode=eager, rank=2, recipe=fp8-current)",
}
OFFLOAD = {
    "offload.CpuOffload(recipe=bf16)",
    "offload.CpuOffload(recipe=fp8-current)",
    "offload.CpuOffloadTransformerLayer(recipe=bf16)",
    "offload.CpuOffloadTransformerLayer(recipe=fp8-current)",
}
EMULATION_QUANTIZE = {
    "quantize.Quantize(backend=torch-ref, shape=4x2048x5120, variant=nvfp4-row)",
    "quantize.Quantize(backend=torch-ref, shape=8192x5120, variant=nvfp4-row)",
}
CAT = "at::native::(anonymous namespace)::CatArrayBatchedCopy_vectorized"


def records(results: Path) -> dict[str, CaseRecord]:
    """Case label -> its record, read by the parser uploads go through."""
    return {
        case_label_of(record): record
        for path in sorted(results.glob("vm-h200/*.tewatch/cases/*.json"))
        for record in [parse_record(CaseRecord, path.read_bytes(), path.name)]
    }


def case_label_of(record: CaseRecord) -> str:
    """As tewatch.pipeline.labels writes a case in the report: `linear.LinearFwdBwd(mode=eager, rank=2, ...)`."""
    params = ", ".join(f"{k}={v}" for k, v in sorted(record.params.items()))
    return f"{record.case}({params})"


def table_of(record: CaseRecord) -> KernelTable:
    graph_breaks = record.metrics.get("graph_breaks")
    block = record.kernels
    assert block is not None and block.device == "cuda"
    return KernelTable(
        tuple(Kernel(row.name, row.calls_per_call, row.total_seconds) for row in block.table),
        block.launches_per_call,
        block.syncs_per_call,
        block.copies_per_call,
        graph_breaks=graph_breaks.value if graph_breaks else None,
    )


@pytest.fixture(scope="module")
def arms() -> dict[str, dict[str, CaseRecord]]:
    found = {
        arm: records(KEPT / folder)
        for arm, folder in [
            ("base", "base-results"),
            ("aa", "aa-results"),
            ("head", "head-results"),
            ("host", "host-head-results"),
        ]
    }
    assert {arm: len(cases) for arm, cases in found.items()} == dict.fromkeys(found, 23)
    return found


def changes(arms, head: str) -> dict[str, list[KernelSetChange]]:
    """Case label -> what the head arm's call runs differently from the base's (cases with a table)."""
    base = arms["base"]
    return {
        label: kernel_set_changes(table_of(base[label]), table_of(record))
        for label, record in arms[head].items()
        if record.kernels is not None
    }


def kinds(found: list[KernelSetChange]) -> set[ChangeKind]:
    return {change.kind for change in found}


def test_the_a_a_arm_runs_what_the_base_runs_in_every_case(arms) -> None:
    found = changes(arms, "aa")
    assert len(found) == 20  # every case but native NVFP4's, unsupported on Hopper
    assert {label: c for label, c in found.items() if c} == {}
    for label, record in arms["aa"].items():
        if record.kernels is not None:
            assert table_of(record).names() == table_of(arms["base"][label]).names(), label


def test_a_host_sync_per_call_shows_as_syncs_per_call_where_te_modules_run(arms) -> None:
    found = changes(arms, "head")
    syncs = {label: (c.base, c.head) for label, cs in found.items() for c in cs if c.kind is ChangeKind.syncs}
    assert syncs == {
        **dict.fromkeys(EAGER_LINEAR | HOST_TE, (0.0, 1.0)),
        **dict.fromkeys(OFFLOAD, (0.0, 4.0)),  # four layers, one sync each
    }


def test_the_split_kernel_adds_a_concatenation_and_doubles_the_emulation_quantize_launches(arms) -> None:
    found = changes(arms, "head")
    for label in EMULATION_QUANTIZE:
        by_kind = {c.kind: c for c in found[label]}
        assert (by_kind[ChangeKind.launches].base, by_kind[ChangeKind.launches].head) == (55.0, 110.0)
        (appeared,) = [c for c in found[label] if c.kind is ChangeKind.appeared]
        assert appeared.name.startswith(CAT), appeared.name
        assert ChangeKind.syncs not in by_kind


def graph_breaks(found) -> dict:
    """label -> (base, head) graph breaks, for the cases whose graph breaks changed."""
    return {
        label: (c.base, c.head)
        for label, cs in found.items()
        for c in cs
        if c.kind is ChangeKind.graph_breaks
    }


def test_under_torch_compile_the_sync_is_one_more_graph_break(arms) -> None:
    found = changes(arms, "head")
    breaks = graph_breaks(found)
    assert breaks == dict.fromkeys(COMPILED_LINEAR, (1.0, 2.0))


def test_the_graph_break_perturbation_breaks_compiled_te_linear_from_1_to_4(arms) -> None:
    found = changes(arms, "host")
    breaks = graph_breaks(found)
    assert breaks == dict.fromkeys(COMPILED_LINEAR, (1.0, 4.0))
    assert {label: c for label, c in found.items() if label not in COMPILED_LINEAR and c} == {}
    assert all(kinds(found[label]) == {ChangeKind.graph_breaks} for label in COMPILED_LINEAR)


def test_the_host_delay_is_lost_in_the_cpu_time_of_identical_code(arms) -> None:
    """30 us a call of host delay, against base and A/A arm differing by more than that per call on a
    machine three jobs shared: compiled te.Linear bf16 took 377 us of CPU per call in the base, 1008 us
    in the A/A arm."""
    label = "linear.LinearFwdBwd(mode=default, rank=2, recipe=bf16)"
    base, aa = (arms[arm][label].metrics["cpu_seconds"].value for arm in ("base", "aa"))
    assert round(base * 1e6) == 377 and round(aa * 1e6) == 1008
    ratios = [
        arms["aa"][label].metrics["cpu_seconds"].value / record.metrics["cpu_seconds"].value
        for label, record in arms["base"].items()
        if "cpu_seconds" in record.metrics
    ]
    assert max(max(ratios), 1 / min(ratios)) > 2.5
