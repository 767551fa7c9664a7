"""Comparisons on A/B rounds, multi-modal samples, and the single-run family estimate of small families."""

import numpy as np

from tewatch.detect.compare import ComparePair, CompareVerdict, NoiseSource, Side, compare_sweep
from tewatch.detect.modes import sample_modes


def _rounds(rng, level: float, rounds: int, level_sigma: float, within_cv: float = 0.002, n: int = 30,
            shift: float = 0.0) -> Side:
    """`rounds` processes, each at its own level (log-normal, `level_sigma`), tight samples within."""
    parts = [level * (1 + shift) * np.exp(rng.normal(0, level_sigma)) * np.exp(rng.normal(0, within_cv, n))
             for _ in range(rounds)]
    return Side(np.concatenate(parts), [n] * rounds)


def _family(rng, cases: int, rounds: int, level_sigma: float, shifts) -> list[ComparePair]:
    return [ComparePair(_rounds(rng, 1e-3, rounds, level_sigma), _rounds(rng, 1e-3, rounds, level_sigma, shift=s),
                        family="quantize", paired=True) for s in shifts[:cases]]


def test_rounds_find_a_five_percent_change_that_one_run_per_side_cannot():
    rng = np.random.default_rng(1)
    shifts = [0.05] * 6 + [0.0] * 18
    with_rounds = compare_sweep(_family(rng, 24, 3, 0.01, shifts))
    assert [c.verdict for c in with_rounds[:6]] == [CompareVerdict.regression] * 6
    assert all(c.noise_source is NoiseSource.rounds and c.rounds == 3 for c in with_rounds)
    assert CompareVerdict.regression not in {c.verdict for c in with_rounds[6:]}
    assert sum(c.verdict is CompareVerdict.unchanged for c in with_rounds[6:]) >= 12
    single = [ComparePair(Side(p.base.samples[:30]), Side(p.head.samples[:30]), family="quantize")
              for p in _family(np.random.default_rng(1), 24, 3, 0.01, shifts)]
    assert CompareVerdict.unchanged not in {c.verdict for c in compare_sweep(single)}


def test_a_change_of_the_whole_family_does_not_widen_the_round_intervals():
    rng = np.random.default_rng(2)
    moved = compare_sweep(_family(rng, 12, 3, 0.005, [0.06] * 12))
    assert {c.verdict for c in moved} == {CompareVerdict.regression}
    assert max(c.ci_high - c.ci_low for c in moved) < 0.04


def test_one_wild_series_does_not_lend_its_spread_to_the_family():
    rng = np.random.default_rng(3)
    pairs = _family(rng, 10, 3, 0.003, [0.05] * 10)
    wild = ComparePair(_rounds(rng, 1e-3, 3, 0.8), _rounds(rng, 1e-3, 3, 0.8), family="quantize", paired=True)
    results = compare_sweep([*pairs, wild])
    assert [c.verdict for c in results[:10]] == [CompareVerdict.regression] * 10
    assert results[10].verdict is CompareVerdict.inconclusive


def test_unpaired_rounds_still_use_the_spread_of_the_rounds():
    rng = np.random.default_rng(4)
    pairs = [ComparePair(_rounds(rng, 1e-3, 4, 0.01), _rounds(rng, 1e-3, 4, 0.01, shift=0.2), family="gemm")
             for _ in range(5)]
    assert {c.verdict for c in compare_sweep(pairs)} == {CompareVerdict.regression}
    assert all(c.noise_source is NoiseSource.rounds for c in compare_sweep(pairs))


def test_two_speeds_within_one_process_are_unstable_not_a_change():
    rng = np.random.default_rng(5)
    fast, slow = 0.27e-3 * np.exp(rng.normal(0, 0.02, 30)), 0.55e-3 * np.exp(rng.normal(0, 0.02, 20))
    base = np.concatenate([fast, slow])
    head = np.concatenate([fast[:20], slow, slow[:10]]) * 1.12
    [c] = compare_sweep([ComparePair(Side(base), Side(head), history_sigma=0.01)])
    assert c.verdict is CompareVerdict.unstable
    assert len(c.modes) == 2 and 0.25e-3 < c.modes[0] < 0.3e-3 and 0.5e-3 < c.modes[1] < 0.6e-3
    # a head that left both of the base's speeds behind is a regression all the same
    [moved] = compare_sweep([ComparePair(Side(base), Side(base * 3.0), history_sigma=0.01)])
    assert moved.verdict is CompareVerdict.regression


def test_scattered_slow_samples_are_no_mode_but_two_tight_groups_are():
    rng = np.random.default_rng(6)
    tail = np.concatenate([np.exp(rng.normal(0, 0.01, 45)), 1.1 + rng.uniform(0, 1.5, 8)])
    assert sample_modes(tail) == []
    two = np.concatenate([np.exp(rng.normal(0, 0.01, 40)), 2 * np.exp(rng.normal(0, 0.01, 10))])
    assert len(sample_modes(two)) == 2
    assert sample_modes(two[:8]) == []  # too few samples to tell


def test_a_small_family_that_moved_together_keeps_its_intervals_near_the_change():
    # four GEMM cases of five slowed by 4.7 to 9.4 % in one H200 pull request: Student's t on a median
    # absolute deviation of five values (1.5 degrees of freedom) gave intervals of about +-30 %
    rng = np.random.default_rng(7)
    changes = [0.0, 0.047, 0.094, 0.088, 0.053]
    pairs = [(1e-3 * np.exp(rng.normal(0, 0.002, 200)), 1e-3 * (1 + c) * np.exp(rng.normal(0, 0.002, 200)),
              False, None) for c in changes]
    results = compare_sweep(pairs, families=["gemm"] * 5)
    assert max(c.ci_high - c.ci_low for c in results) < 0.35
    assert all(abs(c.effect - change) < 0.01 for c, change in zip(results, changes))


def test_kernel_time_that_moved_under_an_unchanged_event_time_is_not_a_change():
    from dataclasses import replace

    from tewatch.detect.compare import kernel_against_event

    rng = np.random.default_rng(8)
    [event] = compare_sweep([ComparePair(_rounds(rng, 1e-3, 3, 0.001), _rounds(rng, 1e-3, 3, 0.001), paired=True)])
    assert event.verdict is CompareVerdict.unchanged
    kernel = replace(event, verdict=CompareVerdict.regression, effect=0.12)
    assert kernel_against_event(kernel, event).verdict is CompareVerdict.inconclusive
    # the host's share: event time moved, kernel time did not, and that stays a regression
    slower_event = replace(event, verdict=CompareVerdict.regression)
    assert kernel_against_event(event, slower_event) is event
    assert kernel_against_event(kernel, slower_event).verdict is CompareVerdict.regression
    # a GEMM 3.8 % slower in event time read 8 % faster in kernel time on an H200: the kernel time is noise
    faster_kernel = replace(event, verdict=CompareVerdict.improvement, effect=-0.08)
    assert kernel_against_event(faster_kernel, slower_event).verdict is CompareVerdict.inconclusive


def _one_shot(rng, level: float, shift: float = 0.0, rounds: int = 3, n: int = 30) -> Side:
    """A check timed in round 1 alone of an A/B session: its samples, then empty rounds."""
    samples = level * (1 + shift) * np.exp(rng.normal(0, 0.003, n))
    return Side(samples, [n] + [0] * (rounds - 1))


def test_a_check_timed_once_in_a_session_of_rounds_gets_the_noise_of_one_process_on_the_host():
    # one CPU round trip of the same code, one process a side, read 21 % slower on an H200 (samples 2.7 %)
    rng = np.random.default_rng(9)
    [moved] = compare_sweep([ComparePair(_one_shot(rng, 3e-3), _one_shot(rng, 3e-3, 0.21), paired=True)])
    assert moved.verdict is CompareVerdict.inconclusive and moved.noise_source is NoiseSource.host
    # an order of magnitude is a regression all the same
    [tenfold] = compare_sweep([ComparePair(_one_shot(rng, 3e-3), _one_shot(rng, 3e-3, 9.0), paired=True)])
    assert tenfold.verdict is CompareVerdict.regression
    # the same samples as two plain single runs keep the single-run path's floor
    [plain] = compare_sweep([ComparePair(Side(_one_shot(rng, 3e-3).samples), Side(_one_shot(rng, 3e-3, 0.21).samples))])
    assert plain.noise_source is not NoiseSource.host
