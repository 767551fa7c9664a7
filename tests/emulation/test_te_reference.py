"""Bit-for-bit agreement with Transformer Engine on a GPU runner: its pure-PyTorch NVFP4QuantizerRef
(any CUDA device) and, where the device supports NVFP4 (sm_100+), its native NVFP4Quantizer.

Skipped where Transformer Engine or CUDA is missing (CI on CPU).
"""

import pytest
import torch

from benchmarks.nvfp4_emulation import (
    NVFP4Emulated,
    gemm_nvfp4,
    quantize_nvfp4,
    quantize_nvfp4_columnwise,
)

if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device", allow_module_level=True)
try:
    import transformer_engine.pytorch as te
    import transformer_engine_torch as tex
    from transformer_engine.pytorch.custom_recipes import reference_utils
    from transformer_engine.pytorch.custom_recipes.gemm import GEMMType, MMParams
    from transformer_engine.pytorch.custom_recipes.reference_nvfp4 import NVFP4QuantizerRef
except Exception as error:  # TE raises more than ImportError when its libraries are absent
    pytest.skip(f"Transformer Engine unavailable: {error}", allow_module_level=True)

SHAPES = [(128, 128), (256, 272), (304, 304), (1024, 2048), (2048, 1024), (8192, 5120)]


def _reference(tile: tuple[int, int], rht: bool = False, sign_mask: bool = True) -> "NVFP4QuantizerRef":
    return NVFP4QuantizerRef(
        dtype=reference_utils.Fp4Formats.E2M1,
        rowwise=True,
        columnwise=True,
        quant_tile_shape=tile,
        with_rht=rht,
        with_random_sign_mask=sign_mask,
    )


def _input(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(shape, generator=g, device="cuda")
    x[..., ::97] *= 50.0  # some outliers, so block scales spread over the E4M3 range
    return x.to(dtype)


def _assert_bits(mine: NVFP4Emulated, data: torch.Tensor, scales: torch.Tensor, amax: torch.Tensor) -> None:
    rows = mine.rows
    assert torch.equal(mine.data.reshape(rows, -1), data.view(torch.uint8))
    assert torch.equal(mine.scales.view(torch.uint8), scales.view(torch.uint8)[:rows, : mine.cols // 16])
    assert torch.equal(mine.global_amax, amax.to(torch.float32).view(1))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("block_2d", [False, True], ids=["1x16", "16x16"])
def test_quantize_matches_te_reference(shape: tuple[int, int], dtype: torch.dtype, block_2d: bool) -> None:
    x = _input(shape, dtype)
    ref = _reference((16, 16) if block_2d else (1, 16)).quantize(x)
    _assert_bits(quantize_nvfp4(x, block_2d=block_2d), ref.data, ref.scale, ref.global_amax_row)
    _assert_bits(
        quantize_nvfp4_columnwise(x, block_2d=block_2d), ref.data_t, ref.scale_t, ref.global_amax_col
    )


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("sign_mask", [True, False], ids=["te_signs", "no_signs"])
def test_columnwise_rht_matches_te_reference(shape: tuple[int, int], sign_mask: bool) -> None:
    x = _input(shape, torch.bfloat16, seed=1)
    ref = _reference((1, 16), rht=True, sign_mask=sign_mask).quantize(x)
    signs = None if sign_mask else [1.0] * 16
    _assert_bits(quantize_nvfp4(x), ref.data, ref.scale, ref.global_amax_row)  # row-wise: no RHT
    col = quantize_nvfp4_columnwise(x, rht=True, rht_signs=signs)
    _assert_bits(col, ref.data_t, ref.scale_t, ref.global_amax_col)


@pytest.mark.parametrize("shape", [(4, 64, 256), (2, 4, 32, 256)], ids=str)
def test_higher_rank_input_matches_te_reference_of_the_flattened_matrix(shape: tuple[int, ...]) -> None:
    x = _input(shape, torch.bfloat16, seed=2)
    ref = _reference((1, 16), rht=True).quantize(x)
    _assert_bits(quantize_nvfp4(x), ref.data, ref.scale, ref.global_amax_row)
    _assert_bits(quantize_nvfp4_columnwise(x, rht=True), ref.data_t, ref.scale_t, ref.global_amax_col)


# TE's qgemm needs the reduction dim divisible by 32 and N by 8 in all three GEMMs (wgrad reduces over m)
@pytest.mark.parametrize(("m", "k", "n"), [(128, 128, 128), (256, 1024, 256), (1024, 3072, 992)], ids=str)
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16], ids=str)
def test_gemm_matches_te_reference_qgemm(m: int, k: int, n: int, out_dtype: torch.dtype) -> None:
    x, w, dy = (
        _input((m, k), torch.bfloat16, 3),
        _input((n, k), torch.bfloat16, 4),
        _input((m, n), torch.bfloat16, 5),
    )
    activations, weights = _reference((1, 16), rht=True), _reference((16, 16))
    rx, rw, rdy = activations.quantize(x), weights.quantize(w), activations.quantize(dy)

    def qgemm(
        a: object,
        b: object,
        a_data: torch.Tensor,
        b_data: torch.Tensor,
        a_scale: torch.Tensor,
        b_scale: torch.Tensor,
        kind: "GEMMType",
    ) -> torch.Tensor:
        return activations.qgemm(
            a_data, b_data, MMParams(), out_dtype, a_scale, b_scale, gemm_type=kind, qresult_x=a, qresult_w=b
        )

    fprop = qgemm(rx, rw, rx.data, rw.data, rx.scale, rw.scale, GEMMType.FPROP)
    mine = gemm_nvfp4(quantize_nvfp4(x), quantize_nvfp4(w, block_2d=True), out_dtype)
    assert torch.equal(mine, fprop)

    dgrad = qgemm(rdy, rw, rdy.data, rw.data_t, rdy.scale, rw.scale_t, GEMMType.DGRAD)
    mine = gemm_nvfp4(quantize_nvfp4(dy), quantize_nvfp4_columnwise(w, block_2d=True), out_dtype)
    assert torch.equal(mine, dgrad)

    wgrad = qgemm(rdy, rx, rdy.data_t, rx.data_t, rdy.scale_t, rx.scale_t, GEMMType.WGRAD)
    mine = gemm_nvfp4(
        quantize_nvfp4_columnwise(dy, rht=True), quantize_nvfp4_columnwise(x, rht=True), out_dtype
    )
    assert torch.equal(mine, wgrad)


native_available, native_reason = te.is_nvfp4_available(return_reason=True)


@pytest.mark.skipif(not native_available, reason=str(native_reason))
@pytest.mark.parametrize("shape", [(128, 128), (256, 272), (8192, 5120)], ids=str)
@pytest.mark.parametrize(("rht", "block_2d"), [(False, False), (True, False), (False, True)], ids=str)
def test_quantize_matches_native_nvfp4_quantizer(shape: tuple[int, int], rht: bool, block_2d: bool) -> None:
    x = _input(shape, torch.bfloat16, seed=6)
    quantizer = te.NVFP4Quantizer(
        fp4_dtype=tex.DType.kFloat4E2M1,
        rowwise=True,
        columnwise=True,
        with_rht=rht,
        with_post_rht_amax=rht,
        with_2d_quantization=block_2d,
        stochastic_rounding=False,
    )
    with torch.no_grad():
        native = quantizer(x)
    _assert_bits(
        quantize_nvfp4(x, block_2d=block_2d),
        native._rowwise_data,
        native._rowwise_scale_inv,
        native._amax_rowwise,
    )
    _assert_bits(
        quantize_nvfp4_columnwise(x, block_2d=block_2d, rht=rht),
        native._columnwise_data,
        native._columnwise_scale_inv,
        native._amax_columnwise,
    )
