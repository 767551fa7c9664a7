"""E2M1 rounding to codes, stochastic rounding, and the two-codes-per-byte packing."""

import pytest
import torch

from benchmarks.nvfp4_emulation import E2M1_VALUES, pack_e2m1_codes, unpack_e2m1_codes
from benchmarks.nvfp4_emulation.e2m1 import (
    e2m1_codes_to_float,
    round_to_e2m1_codes,
    stochastic_round_to_e2m1_codes,
)


def test_e2m1_values_are_the_eight_magnitudes() -> None:
    assert E2M1_VALUES.tolist() == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def test_every_e2m1_value_maps_to_its_own_code_with_sign() -> None:
    values = torch.cat([E2M1_VALUES, -E2M1_VALUES[1:]])
    codes = round_to_e2m1_codes(values)
    assert codes.tolist() == list(range(8)) + list(range(9, 16))
    assert torch.equal(e2m1_codes_to_float(codes), values)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.25, 0.0),  # ties go to the even code
        (0.75, 1.0),
        (1.25, 1.0),
        (1.75, 2.0),
        (2.5, 2.0),
        (3.5, 4.0),
        (5.0, 4.0),
        (0.26, 0.5),  # just off a tie
        (0.74, 0.5),
        (1.26, 1.5),
        (2.51, 3.0),
        (4.99, 4.0),
        (5.01, 6.0),
        (6.0, 6.0),
    ],
)
def test_round_to_nearest_with_ties_to_even(value: float, expected: float) -> None:
    codes = round_to_e2m1_codes(torch.tensor([value, -value]))
    assert e2m1_codes_to_float(codes).tolist() == [expected, -expected]


def test_negative_values_that_round_to_zero_keep_the_sign_but_negative_zero_does_not() -> None:
    codes = round_to_e2m1_codes(torch.tensor([-0.1, -0.25, -0.0, 0.0, float("nan")]))
    assert codes.tolist() == [8, 8, 0, 0, 0]
    decoded = e2m1_codes_to_float(codes)
    assert torch.signbit(decoded).tolist() == [True, True, False, False, False]


def test_rounding_rejects_non_float32() -> None:
    with pytest.raises(TypeError, match="float32"):
        round_to_e2m1_codes(torch.zeros(4, dtype=torch.bfloat16))


def test_packing_puts_the_even_element_in_the_low_nibble() -> None:
    codes = torch.tensor([[1, 2, 15, 8]], dtype=torch.uint8)
    packed = pack_e2m1_codes(codes)
    assert packed.tolist() == [[0x21, 0x8F]]
    assert torch.equal(unpack_e2m1_codes(packed), codes)


def test_unpack_inverts_pack_for_all_code_pairs() -> None:
    codes = torch.cartesian_prod(torch.arange(16), torch.arange(16)).to(torch.uint8).reshape(4, 128)
    packed = pack_e2m1_codes(codes)
    assert packed.shape == (4, 64)
    assert len(set(packed.flatten().tolist())) == 256
    assert torch.equal(unpack_e2m1_codes(packed), codes)


def test_packing_rejects_odd_lengths() -> None:
    with pytest.raises(ValueError, match="odd"):
        pack_e2m1_codes(torch.zeros(3, dtype=torch.uint8))


def test_stochastic_rounding_keeps_grid_values() -> None:
    values = torch.cat([E2M1_VALUES, -E2M1_VALUES[1:]]).repeat(100)
    codes = stochastic_round_to_e2m1_codes(values, torch.Generator().manual_seed(1))
    assert torch.equal(e2m1_codes_to_float(codes), values)


@pytest.mark.parametrize(
    ("value", "lower", "upper", "p_up"),
    [(0.25, 0.0, 0.5, 0.5), (4.5, 4.0, 6.0, 0.25), (-1.125, -1.0, -1.5, 0.25), (2.9, 2.0, 3.0, 0.9)],
)
def test_stochastic_rounding_picks_a_neighbour_with_probability_set_by_distance(
    value: float, lower: float, upper: float, p_up: float
) -> None:
    draws = 40_000
    codes = stochastic_round_to_e2m1_codes(torch.full((draws,), value), torch.Generator().manual_seed(7))
    decoded = e2m1_codes_to_float(codes)
    assert set(decoded.tolist()) <= {lower, upper}
    share_up = (decoded == upper).double().mean().item()
    tolerance = 5 * (p_up * (1 - p_up) / draws) ** 0.5
    assert abs(share_up - p_up) < tolerance


def test_rounding_saturates_beyond_6() -> None:
    values = torch.tensor([7.0, -100.0, float("inf"), float("-inf")])
    assert round_to_e2m1_codes(values).tolist() == [7, 15, 7, 15]
    assert stochastic_round_to_e2m1_codes(values).tolist() == [7, 15, 7, 15]
