import numpy as np
import pytest

from tewatch.detect.compare import CompareVerdict, NoiseSource, compare_sweep
from tewatch.detect.config import CompareConfig
from tewatch.detect.fdr import benjamini_hochberg


def samples(level: float, cv: float, n: int, seed: int) -> np.ndarray:
    return level * np.exp(np.random.default_rng(seed).normal(0.0, cv, n))


def test_verdicts_on_samples():
    base = samples(1.0, 0.01, 60, 1)
    pairs = [
        (base, samples(1.10, 0.01, 60, 2), False, 0.005),  # 10 % slower
        (base, samples(0.90, 0.01, 60, 3), False, 0.005),  # 10 % faster
        (base, samples(1.00, 0.01, 60, 4), False, 0.005),  # same
        (base, samples(1.05, 0.01, 60, 5), False, 0.08),  # 5 % but runs wander by 8 %
        (base, samples(1.10, 0.01, 3, 6), False, 0.005),  # too few samples
    ]
    results = compare_sweep(pairs)
    assert [c.verdict for c in results] == [
        CompareVerdict.regression,
        CompareVerdict.improvement,
        CompareVerdict.unchanged,
        CompareVerdict.inconclusive,
        CompareVerdict.inconclusive,
    ]
    assert {c.noise_source for c in results} == {NoiseSource.history}


def test_higher_is_better_flips_the_verdict_and_the_interval_covers_the_effect():
    base = samples(500.0, 0.01, 50, 7)
    [c] = compare_sweep([(base, samples(550.0, 0.01, 50, 8), True, 0.005)])
    assert c.verdict is CompareVerdict.improvement
    assert c.ci_low < c.effect < c.ci_high
    assert c.ci_low < 0.10 < c.ci_high


def test_process_level_noise_is_not_a_regression_without_history():
    # two processes of the same code, 2.5 % apart: tight samples, but the assumed run-to-run noise holds
    [c] = compare_sweep(
        [(samples(1.0, 0.005, 100, 9), samples(1.025, 0.005, 100, 10), False, None)],
        CompareConfig(between_run_sigma=0.02),
    )
    assert c.verdict is not CompareVerdict.regression


def test_benjamini_hochberg_matches_the_textbook_example():
    p = [0.01, 0.04, 0.03, 0.005]
    assert np.allclose(benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02])


def test_fdr_control_keeps_a_sweep_of_unchanged_cases_quiet():
    rng = np.random.default_rng(11)
    pairs = [
        (rng.normal(1, 0.01, 30).clip(0.9), rng.normal(1, 0.01, 30).clip(0.9), False, 0.002)
        for _ in range(300)
    ]
    verdicts = [c.verdict for c in compare_sweep(pairs, CompareConfig(min_effect=0.001))]
    assert verdicts.count(CompareVerdict.regression) + verdicts.count(CompareVerdict.improvement) <= 3


def test_samples_that_are_not_positive_numbers_are_dropped():
    [c] = compare_sweep([([1.0] * 10 + [float("nan"), -1.0], [1.0] * 10, False, 0.01)])
    assert c.n_base == 10
    with pytest.raises(ValueError):
        compare_sweep([(["x"], [1.0], False, None)])


def _process(level_sigma: float, within_cv: float, n: int, rng: np.random.Generator, shift: float = 0.0):
    """One process's samples: its own level (log-normal around 1 + shift), tight samples around it."""
    level = (1.0 + shift) * np.exp(rng.normal(0.0, level_sigma))
    return level * np.exp(rng.normal(0.0, within_cv, n))


def test_the_family_prior_keeps_process_levels_of_tight_samples_quiet():
    # 30 cases of one benchmark, two processes each: levels 10 % apart at random, samples within 1 %
    rng = np.random.default_rng(5)
    pairs = [(_process(0.10, 0.01, 50, rng), _process(0.10, 0.01, 50, rng), False, None) for _ in range(30)]
    alone = [c.verdict for c in compare_sweep(pairs)]
    pooled = compare_sweep(pairs, families=["linear"] * 30)
    assert sum(v in (CompareVerdict.regression, CompareVerdict.improvement) for v in alone) >= 5
    assert all(c.verdict is CompareVerdict.inconclusive for c in pooled)
    assert all(0.07 < c.between_run_sigma < 0.14 and c.noise_source is NoiseSource.benchmark for c in pooled)


def test_a_change_of_every_case_of_a_family_is_still_found():
    rng = np.random.default_rng(6)
    pairs = [
        (_process(0.005, 0.01, 50, rng), _process(0.005, 0.01, 50, rng, shift=0.10), False, None)
        for _ in range(20)
    ]
    verdicts = {c.verdict for c in compare_sweep(pairs, families=["gemm"] * 20)}
    assert verdicts == {CompareVerdict.regression}


def test_a_change_of_fewer_than_half_of_a_family_is_still_found():
    rng = np.random.default_rng(7)
    pairs = [
        (
            _process(0.005, 0.01, 50, rng),
            _process(0.005, 0.01, 50, rng, shift=1.0 if i < 8 else 0.0),
            False,
            None,
        )
        for i in range(20)
    ]
    verdicts = [c.verdict for c in compare_sweep(pairs, families=["quantize"] * 20)]
    assert verdicts[:8] == [CompareVerdict.regression] * 8
    assert CompareVerdict.regression not in verdicts[8:]


def test_families_of_fewer_cases_than_the_minimum_lend_nothing():
    rng = np.random.default_rng(8)
    pairs = [(_process(0.2, 0.01, 50, rng), _process(0.2, 0.01, 50, rng), False, None) for _ in range(4)]
    results = compare_sweep(pairs, CompareConfig(min_family_cases=5), families=["rht"] * 4)
    assert all(c.between_run_sigma < 0.05 for c in results)
    assert {c.noise_source for c in results} <= {NoiseSource.samples, NoiseSource.floor}


def _timings(folder: str) -> dict[tuple[str, tuple[str, ...]], list[float]]:
    """(benchmark, param reprs) -> samples of every timed case of the run kept in a fixture folder."""
    from pathlib import Path

    from tewatch.ingest.asv_files import samples_by_case

    samples = samples_by_case(Path(__file__).resolve().parents[1] / "fixtures" / folder)
    return {key: values for key, values in samples.items() if key[0].endswith("track_seconds")}


def test_two_real_h200_runs_differ_only_where_the_pull_request_changed_te():
    # the campaign's runs on one H200: TE as released, then with its reference NVFP4 quantize doubled
    base, head = _timings("h200-campaign/base-results"), _timings("h200-campaign/head-results")
    keys = sorted(set(base) & set(head))
    pairs = [(base[k], head[k], False, None) for k in keys]
    results = compare_sweep(pairs, families=[benchmark for benchmark, _ in keys])
    flagged = {
        k: c
        for k, c in zip(keys, results, strict=True)
        if c.verdict in (CompareVerdict.regression, CompareVerdict.improvement)
    }
    doubled = {k for k in keys if k[0] == "quantize.Quantize.track_seconds" and k[1][0] == "'te-ref'"}
    assert len(doubled) == 10 and doubled <= set(flagged)
    assert all(
        flagged[k].verdict is CompareVerdict.regression and 0.7 < flagged[k].effect < 1.3 for k in doubled
    )
    # quantize, GEMM, te.Linear and the contract checks that the change does not touch stay quiet (the
    # reference RHT, a 0.3-0.6 ms host-bound call with one sibling, is the one that does not: README)
    assert set(flagged) - doubled <= {("rht.Rht.track_seconds", ("'te-ref'", "'8192x5120'"))}
    alone = compare_sweep(pairs)
    assert (
        sum(
            c.verdict is not CompareVerdict.inconclusive
            for k, c in zip(keys, alone, strict=True)
            if k not in doubled
        )
        >= 5
    )


def test_the_spread_prior_keeps_a_clear_change_of_tight_samples():
    base, head = samples(1.0, 0.01, 60, 11), samples(1.5, 0.01, 60, 12)
    [c] = compare_sweep([(base, head, False, None)], CompareConfig(between_run_sigma=0.02))
    assert c.verdict is CompareVerdict.regression and c.between_run_sigma == pytest.approx(0.02)


def test_two_runs_of_the_same_te_on_two_lent_h200s_are_not_told_apart():
    base, again = _timings("h200-campaign/base-results"), _timings("h200-quick-rerun")
    keys = sorted(set(base) & set(again))
    pairs = [(base[k], again[k], False, None) for k in keys]
    assert len(keys) == 86
    assert {c.verdict for c in compare_sweep(pairs, families=[benchmark for benchmark, _ in keys])} == {
        CompareVerdict.inconclusive
    }
    # without the family, tight samples alone call process levels changes (host-bound contract checks of
    # tens of microseconds take the host floor and stay quiet either way)
    assert sum(c.verdict is not CompareVerdict.inconclusive for c in compare_sweep(pairs)) >= 4
