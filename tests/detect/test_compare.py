import numpy as np
import pytest
from tewatch.detect.compare import CompareVerdict, compare_sweep
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
    verdicts = [c.verdict for c in compare_sweep(pairs)]
    assert verdicts == [CompareVerdict.regression, CompareVerdict.improvement, CompareVerdict.unchanged,
                        CompareVerdict.inconclusive, CompareVerdict.inconclusive]


def test_higher_is_better_flips_the_verdict_and_the_interval_covers_the_effect():
    base = samples(500.0, 0.01, 50, 7)
    [c] = compare_sweep([(base, samples(550.0, 0.01, 50, 8), True, 0.005)])
    assert c.verdict is CompareVerdict.improvement
    assert c.ci_low < c.effect < c.ci_high
    assert c.ci_low < 0.10 < c.ci_high


def test_process_level_noise_is_not_a_regression_without_history():
    # two processes of the same code, 2.5 % apart: tight samples, but the assumed run-to-run noise holds
    [c] = compare_sweep([(samples(1.0, 0.005, 100, 9), samples(1.025, 0.005, 100, 10), False, None)],
                        CompareConfig(between_run_sigma=0.02))
    assert c.verdict is not CompareVerdict.regression


def test_benjamini_hochberg_matches_the_textbook_example():
    p = [0.01, 0.04, 0.03, 0.005]
    assert np.allclose(benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02])


def test_fdr_control_keeps_a_sweep_of_unchanged_cases_quiet():
    rng = np.random.default_rng(11)
    pairs = [(rng.normal(1, 0.01, 30).clip(0.9), rng.normal(1, 0.01, 30).clip(0.9), False, 0.002)
             for _ in range(300)]
    verdicts = [c.verdict for c in compare_sweep(pairs, CompareConfig(min_effect=0.001))]
    assert verdicts.count(CompareVerdict.regression) + verdicts.count(CompareVerdict.improvement) <= 3


def test_samples_that_are_not_positive_numbers_are_dropped():
    [c] = compare_sweep([([1.0] * 10 + [float("nan"), -1.0], [1.0] * 10, False, 0.01)])
    assert c.n_base == 10
    with pytest.raises(ValueError):
        compare_sweep([(["x"], [1.0], False, None)])


def _h200_samples(folder: str, benchmark: str, params: tuple[str, ...]) -> np.ndarray:
    import itertools
    import json
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / folder
    path = next(p for p in fixtures.glob("*/*.json") if p.name != "machine.json")
    raw = json.loads(path.read_text())
    row = raw["results"][benchmark]
    columns = raw["result_columns"]
    combos = list(itertools.product(*row[columns.index("params")]))
    return np.asarray(row[columns.index("samples")][combos.index(params)], dtype=float)


def test_without_history_two_runs_of_a_host_bound_call_are_not_a_regression():
    # real H200 runs on two hosts: make_empty of an FP8 block-scaled tensor, about 17 and 31 us, whose
    # samples scatter by 27 % and 42 % within each run
    params = ("'fp8-block'", "4")
    base = _h200_samples("h200-quick", "contracts.ShapeContract.track_seconds", params)
    head = _h200_samples("h200-campaign/head-results", "contracts.ShapeContract.track_seconds", params)
    [c] = compare_sweep([(base, head, False, None)])
    assert c.effect > 0.5 and c.between_run_sigma > 0.2
    assert c.verdict is CompareVerdict.inconclusive


def test_the_spread_prior_keeps_a_clear_change_of_tight_samples():
    base, head = samples(1.0, 0.01, 60, 11), samples(1.5, 0.01, 60, 12)
    [c] = compare_sweep([(base, head, False, None)], CompareConfig(between_run_sigma=0.02))
    assert c.verdict is CompareVerdict.regression and c.between_run_sigma == pytest.approx(0.02)
