"""Stochastic rounding through the full quantizer: unbiased, lower error in expectation, random."""

import torch

from benchmarks.nvfp4_emulation import dequantize_nvfp4, quantize_nvfp4


def _x() -> torch.Tensor:
    return torch.randn(64, 128, generator=torch.Generator().manual_seed(0))


def _draws(x: torch.Tensor, count: int, seed: int = 1) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.stack(
        [
            dequantize_nvfp4(quantize_nvfp4(x, stochastic_rounding=True, generator=generator))
            for _ in range(count)
        ]
    )


def test_mean_of_draws_converges_to_the_input() -> None:
    x = _x()
    count = 256
    draws = _draws(x, count)
    mean = draws.mean(dim=0)
    standard_error = draws.std(dim=0) / count**0.5
    # values that never move are on the grid or saturated at 6 * scale (a bias SR cannot remove)
    random = standard_error > 0
    assert random.float().mean() > 0.9
    z = ((mean - x) / standard_error)[random]
    assert z.abs().mean() < 1.0  # |N(0, 1)| averages 0.8; a biased rounding drifts far above
    assert abs(z.mean().item()) < 5 / z.numel() ** 0.5
    # the error of the mean shrinks like 1 / sqrt(draws)
    few = (draws[:4].mean(dim=0) - x)[random].norm()
    many = (mean - x)[random].norm()
    assert many < 0.2 * few


def test_mean_of_draws_is_closer_to_the_input_than_round_to_nearest() -> None:
    x = _x()
    nearest = dequantize_nvfp4(quantize_nvfp4(x))
    mean = _draws(x, 50).mean(dim=0)
    assert (mean - x).pow(2).mean() < 0.25 * (nearest - x).pow(2).mean()


def test_one_draw_has_more_error_than_round_to_nearest() -> None:
    x = _x()
    nearest = dequantize_nvfp4(quantize_nvfp4(x))
    one = _draws(x, 1)[0]
    assert (one - x).pow(2).mean() > (nearest - x).pow(2).mean()


def test_two_draws_differ_and_a_seeded_generator_repeats() -> None:
    x = _x()
    generator = torch.Generator().manual_seed(3)
    first = quantize_nvfp4(x, stochastic_rounding=True, generator=generator)
    second = quantize_nvfp4(x, stochastic_rounding=True, generator=generator)
    assert not torch.equal(first.data, second.data)
    again = quantize_nvfp4(x, stochastic_rounding=True, generator=torch.Generator().manual_seed(3))
    assert torch.equal(first.data, again.data)


def test_scales_and_amax_do_not_depend_on_the_rounding_mode() -> None:
    x = _x()
    nearest = quantize_nvfp4(x, block_2d=True)
    stochastic = quantize_nvfp4(x, block_2d=True, stochastic_rounding=True)
    assert stochastic.stochastic_rounding and not nearest.stochastic_rounding
    assert torch.equal(nearest.scales.view(torch.uint8), stochastic.scales.view(torch.uint8))
    assert torch.equal(nearest.global_amax, stochastic.global_amax)
