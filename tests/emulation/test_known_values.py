"""Quantization of small tensors whose result is worked out by hand.

Most cases put 2688 (= 6 * 448) in one block so that the global amax is 2688: the per-tensor scale is
then exactly 1, a block whose amax is 6 gets the E4M3 scale 1.0, and its values land on the E2M1 grid
unscaled.
"""

import pytest
import torch

from benchmarks.nvfp4_emulation import dequantize_nvfp4, quantize_nvfp4, unpack_e2m1_codes

ANCHOR = [2688.0] + [0.0] * 15  # a block that fixes the global amax at 2688 (scale 448)


def _row(*blocks: list[float]) -> torch.Tensor:
    return torch.tensor([[v for block in blocks for v in block]], dtype=torch.float32)


def test_every_e2m1_value_round_trips_exactly() -> None:
    values = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0, 0.0]
    q = quantize_nvfp4(_row(values, ANCHOR))
    assert q.global_amax.tolist() == [2688.0]
    assert q.scales.float().tolist() == [[1.0, 448.0]]
    codes = unpack_e2m1_codes(q.data)[0, :16].tolist()
    assert codes == [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 0]
    assert q.data[0, :8].tolist() == [0x10, 0x32, 0x54, 0x76, 0xA9, 0xCB, 0xED, 0x0F]
    assert dequantize_nvfp4(q)[0].tolist() == values + ANCHOR


def test_midpoints_round_to_nearest_even_and_values_beyond_5_saturate_to_6() -> None:
    block = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.3, 0.7, 1.3, 2.6, 5.1, -0.25, -0.75, -5.0, 6.0]
    expected = [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 0.5, 0.5, 1.5, 3.0, 6.0, -0.0, -1.0, -4.0, 6.0]
    out = dequantize_nvfp4(quantize_nvfp4(_row(block, ANCHOR)))[0, :16]
    assert out.tolist() == expected
    assert torch.signbit(out[12]).item()  # -0.25 keeps its sign as -0.0


def test_block_scale_is_amax_over_6_rounded_to_e4m3() -> None:
    # amax / 6: 1.0625 is a tie between E4M3 1.0 and 1.125 -> 1.0 (even); 1.0667 -> 1.125;
    # 0.01 / 6 = 0.00167 -> the subnormal 2**-9; 0.005 / 6 = 0.00083 -> 0 (below half of 2**-9)
    amaxes = [6.375, 6.4, 6.75, 0.01, 0.005]
    x = _row(ANCHOR, *[[a] + [0.0] * 15 for a in amaxes])
    q = quantize_nvfp4(x)
    assert q.scales.float()[0].tolist() == [448.0, 1.0, 1.125, 1.125, 2.0**-9, 0.0]


def test_values_above_6_times_the_block_scale_saturate() -> None:
    # scale rounds down to 1.0 for amax 6.375, so 6.375 saturates at 6 * 1.0
    x = _row(ANCHOR, [6.375, 6.2, -6.375, 3.0] + [0.0] * 12)
    out = dequantize_nvfp4(quantize_nvfp4(x))[0, 16:20]
    assert out.tolist() == [6.0, 6.0, -6.0, 3.0]


def test_block_whose_scale_underflows_decodes_to_zero() -> None:
    x = _row(ANCHOR, [0.005, -0.004] + [0.0] * 14)
    q = quantize_nvfp4(x)
    assert q.scales.float()[0, 1].item() == 0.0
    assert dequantize_nvfp4(q)[0, 16:].abs().sum().item() == 0.0


def test_zero_blocks_get_zero_scale_and_zero_codes() -> None:
    x = _row([0.0] * 16, [1.0] * 16, [-0.0] * 16)
    q = quantize_nvfp4(x)
    assert q.scales.float()[0].tolist() == [0.0, 448.0, 0.0]
    codes = unpack_e2m1_codes(q.data)[0]
    assert codes[:16].tolist() == [0] * 16 and codes[32:].tolist() == [0] * 16  # -0.0 input -> +0 code
    assert dequantize_nvfp4(q)[0].tolist() == [0.0] * 16 + [1.0] * 16 + [0.0] * 16


def test_all_zero_tensor_quantizes_to_zeros_without_nan() -> None:
    q = quantize_nvfp4(torch.zeros(16, 32))
    assert q.global_amax.tolist() == [0.0]
    assert q.scales.float().abs().sum().item() == 0.0
    assert q.data.sum().item() == 0
    out = dequantize_nvfp4(q)
    assert torch.equal(out, torch.zeros(16, 32)) and not out.isnan().any()


def test_global_scale_maps_the_tensor_amax_to_6_times_448() -> None:
    x = _row([3.0] + [1.0] * 15)
    q = quantize_nvfp4(x)
    # global encode scale 2688 / 3 = 896; block scale e4m3(3 * 896 / 6) = 448; decode 448 * 3 / 2688 = 0.5
    assert q.global_amax.tolist() == [3.0]
    assert q.scales.float().tolist() == [[448.0]]
    assert (
        unpack_e2m1_codes(q.data)[0].tolist() == [7] + [4] * 15
    )  # 3 / 0.5 = 6 (code 7), 1 / 0.5 = 2 (code 4)
    assert dequantize_nvfp4(q)[0].tolist() == [3.0] + [1.0] * 15


def test_block_scale_is_relative_to_the_global_amax() -> None:
    # global amax 2688 -> per-tensor scale 1: a block with amax 48 gets scale 8 and step 8 * 0.5 = 4
    x = _row(ANCHOR, [48.0, 20.0, 2.0, -7.0] + [0.0] * 12)
    q = quantize_nvfp4(x)
    assert q.scales.float()[0, 1].item() == 8.0
    # 20 / 8 = 2.5 -> 2 (tie to even), 2 / 8 = 0.25 -> 0 (tie to even), -7 / 8 = -0.875 -> -1
    assert dequantize_nvfp4(q)[0, 16:20].tolist() == [48.0, 16.0, 0.0, -8.0]


def test_a_given_global_amax_replaces_the_tensors_own() -> None:
    # as if the tensor-parallel group's amax were 2688: per-tensor scale 1, block amax 6 -> scale 1
    block = [6.0, 3.0, -1.5, 0.75] + [0.0] * 12
    q = quantize_nvfp4(_row(block), global_amax=torch.tensor(2688.0))
    assert q.global_amax.tolist() == [2688.0]
    assert q.scales.float().tolist() == [[1.0]]
    assert dequantize_nvfp4(q)[0].tolist() == [6.0, 3.0, -1.5, 1.0] + [0.0] * 12
    own = quantize_nvfp4(_row(block))
    assert own.global_amax.tolist() == [6.0] and own.scales.float().tolist() == [[448.0]]


def test_a_global_amax_below_the_tensors_saturates_its_values() -> None:
    q = quantize_nvfp4(_row([12.0, 6.0] + [0.0] * 14), global_amax=torch.tensor([6.0]))
    assert dequantize_nvfp4(q)[0, :2].tolist() == [6.0, 6.0]


def test_global_amax_must_be_one_value() -> None:
    with pytest.raises(ValueError, match="one value"):
        quantize_nvfp4(torch.ones(16, 32), global_amax=torch.ones(2))
