"""Quantize/dequantize behaviour on random data: error bounds, 16x16 tiles, ranks, layouts, dtypes,
and bad input."""

import pytest
import torch

from benchmarks.nvfp4_emulation import (
    NVFP4Emulated,
    dequantize_nvfp4,
    quantize_nvfp4,
    quantize_nvfp4_columnwise,
)


def _gaussian(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _relative_error(approx: torch.Tensor, exact: torch.Tensor) -> float:
    return ((approx.float() - exact.float()).norm() / exact.float().norm()).item()


def _assert_same(a: NVFP4Emulated, b: NVFP4Emulated) -> None:
    assert torch.equal(a.data, b.data)
    assert torch.equal(a.scales.view(torch.uint8), b.scales.view(torch.uint8))
    assert torch.equal(a.global_amax, b.global_amax)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("block_2d", "low", "high"), [(False, 0.08, 0.12), (True, 0.09, 0.15)])
def test_relative_error_on_gaussian_data_is_that_of_blockwise_fp4(
    dtype: torch.dtype, block_2d: bool, low: float, high: float
) -> None:
    x = _gaussian(512, 1024, dtype=dtype)
    error = _relative_error(dequantize_nvfp4(quantize_nvfp4(x, block_2d=block_2d)), x)
    assert low < error < high


def test_error_of_each_value_is_at_most_half_the_widest_grid_gap_of_its_block() -> None:
    x = _gaussian(256, 512) * torch.logspace(-2, 2, 512)  # block scales stay above E4M3's range floor
    q = quantize_nvfp4(x)
    decode_factor = (q.scales.float() * q.global_amax / 2688)[..., None]
    error = (dequantize_nvfp4(q) - x).abs().view(256, 32, 16)
    # the widest E2M1 gap is 4 -> 6, so round-to-nearest is off by at most 1 grid unit
    ratio = error / decode_factor
    assert ratio.max().item() <= 1.0 + 1e-5
    assert ratio.max().item() > 0.9


def test_2d_blocks_share_one_scale_per_16x16_tile() -> None:
    x = _gaussian(64, 128) * torch.rand(64, 1, generator=torch.Generator().manual_seed(3)) * 10
    q2d = quantize_nvfp4(x, block_2d=True)
    tiles = q2d.scales.view(torch.uint8).view(4, 16, 8)
    assert torch.equal(tiles, tiles[:, :1].expand_as(tiles))
    # E4M3 rounding is monotone, so a tile's scale is the largest of its rows' 1x16 scales
    q1d = quantize_nvfp4(x)
    largest_row_scale = q1d.scales.float().view(4, 16, 8).amax(dim=1)
    assert torch.equal(tiles[:, 0].view(torch.float8_e4m3fn).float(), largest_row_scale)
    assert not torch.equal(q1d.scales.view(torch.uint8), q2d.scales.view(torch.uint8))


@pytest.mark.parametrize("shape", [(4, 32, 64), (2, 2, 16, 64), (64,)])
def test_leading_dims_are_flattened_and_shapes_kept(shape: tuple[int, ...]) -> None:
    x = _gaussian(*shape)
    q = quantize_nvfp4(x)
    rows = x.numel() // 64
    assert q.shape == x.shape
    assert q.data.shape == (*shape[:-1], 32)
    assert q.scales.shape == (rows, 4)
    assert dequantize_nvfp4(q).shape == x.shape
    flat = quantize_nvfp4(x.reshape(rows, 64))
    assert torch.equal(q.data.reshape(rows, 32), flat.data)
    assert torch.equal(q.scales.view(torch.uint8), flat.scales.view(torch.uint8))
    assert torch.equal(dequantize_nvfp4(q).reshape(rows, 64), dequantize_nvfp4(flat))


@pytest.mark.parametrize("shape", [(64, 96), (4, 16, 96), (2, 2, 16, 96)])
def test_columnwise_is_the_rowwise_quantization_of_the_2d_transpose(shape: tuple[int, ...]) -> None:
    x = _gaussian(*shape, seed=5)
    x2d = x.reshape(-1, 96)
    col = quantize_nvfp4_columnwise(x)
    assert col.columnwise and col.shape == (96, x2d.shape[0])
    assert col.data.shape == (96, x2d.shape[0] // 2)
    assert col.scales.shape == (96, x2d.shape[0] // 16)
    _assert_same(col, quantize_nvfp4(x2d.t()))
    assert torch.equal(dequantize_nvfp4(col), dequantize_nvfp4(quantize_nvfp4(x2d.t().contiguous())))


def test_non_contiguous_input_gives_the_same_result_as_its_contiguous_copy() -> None:
    x = _gaussian(128, 64).t()
    assert not x.is_contiguous()
    _assert_same(quantize_nvfp4(x), quantize_nvfp4(x.contiguous()))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_input_quantizes_like_its_exact_float32_copy(dtype: torch.dtype) -> None:
    x = _gaussian(64, 128, dtype=dtype)
    for block_2d in (False, True):
        _assert_same(quantize_nvfp4(x, block_2d=block_2d), quantize_nvfp4(x.float(), block_2d=block_2d))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_dequantize_casts_once_from_float32(dtype: torch.dtype) -> None:
    q = quantize_nvfp4(_gaussian(32, 64) * 1000)
    out = dequantize_nvfp4(q, dtype)
    assert out.dtype == dtype
    assert torch.equal(out, dequantize_nvfp4(q).to(dtype))


def test_global_amax_is_the_float32_amax_of_the_input() -> None:
    x = _gaussian(32, 64, dtype=torch.bfloat16)
    q = quantize_nvfp4(x)
    assert q.global_amax.dtype == torch.float32 and q.global_amax.shape == (1,)
    assert q.global_amax.item() == x.float().abs().max().item()


@pytest.mark.parametrize(
    ("x", "kwargs", "error", "message"),
    [
        (torch.ones(4, 16, dtype=torch.int32), {}, TypeError, "expects one of"),
        (torch.ones(4, 24), {}, ValueError, "multiple of 16"),
        (torch.ones(8, 32), {"block_2d": True}, ValueError, "16x16 blocks"),
        (torch.ones(0, 32), {}, ValueError, "non-empty"),
        (torch.tensor(1.0), {}, ValueError, "non-empty"),
        (torch.ones(16, 32), {"rht": True, "rht_signs": [1.0] * 15}, ValueError, "16 values"),
        (torch.ones(16, 32), {"rht": True, "rht_signs": [2.0] * 16}, ValueError, "16 values"),
    ],
)
def test_bad_input_is_rejected_with_a_clear_error(
    x: torch.Tensor, kwargs: dict, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        quantize_nvfp4(x, **kwargs)


def test_columnwise_needs_rows_in_multiples_of_16() -> None:
    with pytest.raises(ValueError, match="multiple of 16"):
        quantize_nvfp4_columnwise(torch.ones(24, 32))


def test_container_rejects_inconsistent_parts() -> None:
    q = quantize_nvfp4(torch.ones(16, 32))
    with pytest.raises(ValueError, match="scales shape"):
        NVFP4Emulated(q.data, q.scales[:, :1], q.global_amax, q.shape)
    with pytest.raises(TypeError, match="uint8"):
        NVFP4Emulated(q.data.to(torch.int8), q.scales, q.global_amax, q.shape)
