"""tewatch.detect.trajectory on trajectories of a real seeded PyTorch loop (tests/training_runs.py)."""

from __future__ import annotations

import math

from tewatch.detect.trajectory import (
    RECIPE_RTOL,
    Band,
    Pairing,
    TrajectoryVerdict,
    compare_trajectories,
    learn_band,
)


def test_identical_code_trains_to_the_last_bit_so_the_band_is_zero(trained):
    band = learn_band([trained["fp32-eager"].loss, trained["aa-fp32-eager"].loss])
    assert band.deterministic and band.runs == 2 and len(band.spread) == 12
    aa = compare_trajectories(
        Pairing.head_vs_base, trained["fp32-eager"].loss, trained["aa-fp32-eager"].loss, band
    )
    assert aa.verdict is TrajectoryVerdict.equal and aa.first_divergent_step is None


def test_a_perturbation_from_step_5_parts_the_curves_at_step_6(trained):
    """The gradient scaled before step 5's update changes the loss of step 6 first."""
    band = learn_band([trained["fp32-eager"].loss, trained["aa-fp32-eager"].loss])
    found = compare_trajectories(
        Pairing.head_vs_base, trained["fp32-eager"].loss, trained["head-fp32-eager"].loss, band
    )
    assert found.verdict is TrajectoryVerdict.diverged and found.first_divergent_step == 6
    assert found.tolerance_there == 0.0 and found.difference_there != 0.0
    assert found.max_abs_difference > 0 and found.max_difference_step >= 6
    assert found.describe("base").startswith("parts from base at step 6 (")


def test_bf16_stays_within_the_recipe_band_of_fp32_and_compiled_equals_eager(trained):
    band = learn_band([trained["fp32-eager"].loss, trained["aa-fp32-eager"].loss])
    recipe = compare_trajectories(
        Pairing.recipe_vs_bf16, trained["bf16-eager"].loss, trained["fp32-eager"].loss, band
    )
    assert recipe.verdict is TrajectoryVerdict.within
    assert 0 < recipe.max_abs_difference < RECIPE_RTOL * min(trained["bf16-eager"].loss)
    compiled = compare_trajectories(
        Pairing.execution_vs_eager, trained["fp32-eager"].loss, trained["fp32-compiled"].loss, band
    )
    assert compiled.verdict is TrajectoryVerdict.equal


def test_without_repeats_same_code_gets_the_noise_floor_and_a_wider_spread_widens_the_band(trained):
    loss = trained["fp32-eager"].loss
    nudged = [v * (1 + 1e-4) for v in loss]
    alone = Band((0.0,) * 12, 1)
    assert not alone.deterministic
    assert compare_trajectories(Pairing.head_vs_base, loss, nudged, alone).verdict is TrajectoryVerdict.within
    far = [v + 0.05 if i >= 3 else v for i, v in enumerate(loss)]
    found = compare_trajectories(Pairing.head_vs_base, loss, far, alone)
    assert found.first_divergent_step == 4 and math.isclose(found.final_difference, 0.05, rel_tol=1e-9)
    noisy = learn_band([loss, far])
    assert compare_trajectories(Pairing.head_vs_base, loss, far, noisy).verdict is TrajectoryVerdict.within
    assert alone.widest(noisy).spread == noisy.spread


def test_a_loss_that_stops_being_finite_diverges_where_it_stops_and_lengths_must_agree(trained):
    loss = trained["fp32-eager"].loss
    broken = [*loss[:7], None, None, None, None, None]
    band = learn_band([loss, trained["aa-fp32-eager"].loss])
    found = compare_trajectories(Pairing.recipe_vs_bf16, loss, broken, band)
    assert found.first_divergent_step == 8 and found.difference_there is None
    assert "finite on one side only" in found.describe("bf16 eager")
    assert found.final_difference == 0.0  # the last step both have is step 7
    both_broken = compare_trajectories(Pairing.head_vs_base, broken, broken, band)
    assert both_broken.verdict is TrajectoryVerdict.equal
    short = compare_trajectories(Pairing.head_vs_base, loss, loss[:6], band)
    assert short.verdict is TrajectoryVerdict.incomparable
    assert learn_band([]) == Band((), 0)
