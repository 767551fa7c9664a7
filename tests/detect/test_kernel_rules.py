"""tewatch.detect.kernels on CUDA-shaped kernel tables (names as the suites normalise TE's, cuBLAS's,
Triton's and PyTorch's kernels): kernel-set changes, the autotuned-family noise rule, attribution and
suspect speed-ups, without a database."""

from __future__ import annotations

import pytest

from tewatch.detect.kernels import (
    ChangeKind,
    Kernel,
    KernelTable,
    attribute,
    family_of,
    kernel_set_changes,
    learn_autotuned,
    seconds_text,
    suspect_speedup,
)

QUANTIZE = "transformer_engine::detail::cast_transpose_kernel<nvte_fp8e4m3>"
AMAX = "transformer_engine::detail::compute_amax_kernel<float>"
GEMM_A = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"
GEMM_B = "nvjet_tst_256x128_64x4_2x1_h_bz_coopA_TNT"  # the same family, another tile shape
TRITON = "triton_poi_fused__to_copy_mul"
FILL = "at::native::vectorized_elementwise_kernel<at::native::FillFunctor<float>>"


def table(*kernels: tuple[str, float, float], **counts: float) -> KernelTable:
    return KernelTable(tuple(Kernel(n, c, t) for n, c, t in kernels), **counts)


BASE = table(
    (GEMM_A, 1.0, 300e-6),
    (QUANTIZE, 2.0, 40e-6),
    (AMAX, 2.0, 6e-6),
    launches_per_call=5.0,
    syncs_per_call=0.0,
    copies_per_call=0.0,
    graph_breaks=0.0,
)


def test_identical_tables_change_nothing():
    assert kernel_set_changes(BASE, BASE) == []


def test_a_kernel_that_disappears_and_one_that_appears():
    head = table(
        (GEMM_A, 1.0, 300e-6),
        (QUANTIZE, 2.0, 40e-6),
        (TRITON, 2.0, 9e-6),
        launches_per_call=5.0,
        syncs_per_call=0.0,
        copies_per_call=0.0,
        graph_breaks=0.0,
    )
    changes = kernel_set_changes(BASE, head)
    assert [(c.kind, c.name) for c in changes] == [
        (ChangeKind.disappeared, AMAX),
        (ChangeKind.appeared, TRITON),
    ]
    assert changes[0].describe() == f"disappeared: {AMAX} (2 per call)"
    assert changes[1].describe() == f"appeared: {TRITON} (2 per call)"


def test_calls_launches_syncs_copies_and_graph_breaks_that_change():
    head = table(
        (GEMM_A, 1.0, 300e-6),
        (QUANTIZE, 4.0, 80e-6),  # split in two
        (AMAX, 2.0, 6e-6),
        launches_per_call=7.0,
        syncs_per_call=1.0,
        copies_per_call=1.0,
        graph_breaks=1.0,
    )
    found = {c.kind: c for c in kernel_set_changes(BASE, head)}
    assert set(found) == {
        ChangeKind.calls,
        ChangeKind.launches,
        ChangeKind.syncs,
        ChangeKind.copies,
        ChangeKind.graph_breaks,
    }
    assert found[ChangeKind.calls].describe() == f"{QUANTIZE}: 2 -> 4 calls per call"
    assert found[ChangeKind.syncs].describe() == "syncs per call 0 -> 1"
    assert found[ChangeKind.graph_breaks].describe() == "graph breaks 0 -> 1"


def test_counts_within_a_quarter_launch_per_call_are_not_changes():
    """A kernel that runs in one of twenty profiled calls (a lazy initialisation) is no part of the call."""
    head = table(
        (GEMM_A, 1.0, 300e-6),
        (QUANTIZE, 2.0, 40e-6),
        (AMAX, 2.2, 6e-6),
        (FILL, 0.05, 1e-7),
        launches_per_call=5.2,
        syncs_per_call=0.05,
        copies_per_call=0.0,
        graph_breaks=0.0,
    )
    assert kernel_set_changes(BASE, head) == []


def test_a_graph_break_count_without_counts_on_one_side_is_not_compared():
    head = table((GEMM_A, 1.0, 300e-6), (QUANTIZE, 2.0, 40e-6), (AMAX, 2.0, 6e-6), graph_breaks=2.0)
    assert (
        kernel_set_changes(table(*[(k.name, k.calls_per_call, k.total_seconds) for k in BASE.kernels]), head)
        == []
    )


def test_variants_of_a_family_share_it():
    assert family_of(GEMM_A) == family_of(GEMM_B)
    assert family_of(QUANTIZE) == "transformer_engine::detail::cast_transpose_kernel"
    assert family_of(FILL) == "at::native::vectorized_elementwise_kernel"
    assert family_of(QUANTIZE) != family_of(AMAX)
    # another cooperative schedule is another family: only numbers and template arguments are folded
    assert family_of("nvjet_tst_128x256_64x4_1x2_h_bz_coopB_TNT") != family_of(GEMM_A)


def test_an_autotuned_family_seen_alternating_in_identical_code_is_one_kernel():
    """cuBLAS picked GEMM_A in one A/A arm, GEMM_B in the other: the family is autotuned, and a head that
    runs GEMM_B against a base that ran GEMM_A changes nothing."""
    aa_arm = table((GEMM_B, 1.0, 310e-6), (QUANTIZE, 2.0, 40e-6), (AMAX, 2.0, 6e-6))
    autotuned = learn_autotuned([BASE, aa_arm])
    assert autotuned == frozenset({family_of(GEMM_A)})
    head = table(
        (GEMM_B, 1.0, 305e-6),
        (QUANTIZE, 2.0, 40e-6),
        (AMAX, 2.0, 6e-6),
        launches_per_call=5.0,
        syncs_per_call=0.0,
        copies_per_call=0.0,
        graph_breaks=0.0,
    )
    assert kernel_set_changes(BASE, head, autotuned) == []
    # without the A/A, the other variant is a change: a family seen with one name only is not noise
    assert {c.kind for c in kernel_set_changes(BASE, head, learn_autotuned([BASE, BASE]))} == {
        ChangeKind.appeared,
        ChangeKind.disappeared,
    }


def test_an_autotuned_family_still_counts_its_calls():
    autotuned = frozenset({family_of(GEMM_A)})
    head = table((GEMM_A, 1.0, 300e-6), (GEMM_B, 1.0, 300e-6), (QUANTIZE, 2.0, 40e-6), (AMAX, 2.0, 6e-6))
    (change,) = kernel_set_changes(BASE, head, autotuned)
    assert (change.kind, change.name, change.base, change.head) == (
        ChangeKind.calls,
        family_of(GEMM_A),
        1.0,
        2.0,
    )


def test_attribution_names_the_kernel_that_moved():
    head = table((GEMM_A, 1.0, 302e-6), (QUANTIZE, 2.0, 78e-6), (AMAX, 2.0, 7e-6))
    found = attribute(41e-6, BASE, head)
    assert [k.name for k in found.kernels] == [QUANTIZE]
    assert found.kernels[0].share == pytest.approx(38 / 41)
    assert found.describe() == f"{QUANTIZE} +38 us of +41 us"


def test_attribution_adds_kernels_until_they_account_for_most_of_it():
    head = table((GEMM_A, 1.0, 320e-6), (QUANTIZE, 2.0, 60e-6), (AMAX, 2.0, 6e-6))
    found = attribute(40e-6, BASE, head)
    assert [k.name for k in found.kernels] == [GEMM_A, QUANTIZE]
    assert found.describe() == f"{GEMM_A} +20 us, {QUANTIZE} +20 us of +40 us"


def test_attribution_of_a_speed_up_and_of_a_host_side_change():
    faster = table((GEMM_A, 1.0, 200e-6), (QUANTIZE, 2.0, 40e-6), (AMAX, 2.0, 6e-6))
    assert attribute(-100e-6, BASE, faster).describe() == f"{GEMM_A} -100 us of -100 us"
    # a host delay: the kernels did not move, and the line says so
    same = attribute(30e-6, BASE, BASE)
    assert same.kernels == ()
    assert same.describe() == "no kernel's time moved with +30 us (kernels +0 ns)"
    small = table((GEMM_A, 1.0, 300e-6), (QUANTIZE, 2.0, 43e-6), (AMAX, 2.0, 6e-6))
    assert attribute(30e-6, BASE, small).describe() == (
        f"{QUANTIZE} +3 us of +30 us (kernels +3 us in all: the rest is the host's)"
    )


def test_a_kernel_that_appeared_is_attributed_its_whole_time():
    head = table((GEMM_A, 1.0, 300e-6), (QUANTIZE, 2.0, 40e-6), (AMAX, 2.0, 6e-6), (TRITON, 2.0, 12e-6))
    assert attribute(12e-6, BASE, head).describe() == f"{TRITON} +12 us of +12 us"


def test_suspect_speed_ups():
    assert suspect_speedup(False, None) is None
    assert suspect_speedup(False, 0.9) is None
    assert suspect_speedup(True, None) == "the kernel list changed"
    assert suspect_speedup(True, 1.4) == "the kernel list changed and 1.40 of the bytes-moved ceiling"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(38e-6, "+38 us"), (-1.25e-3, "-1.25 ms"), (3.4, "+3.4 s"), (5e-10, "+0.5 ns"), (0.0, "+0 ns")],
)
def test_seconds_text(seconds, text):
    assert seconds_text(seconds) == text
