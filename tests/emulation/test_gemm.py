"""The emulated NVFP4 GEMM: accumulation order, agreement with dequantized operands, shapes."""

import pytest
import torch

from benchmarks.nvfp4_emulation import (
    NVFP4Emulated,
    dequantize_nvfp4,
    gemm_nvfp4,
    quantize_nvfp4,
    quantize_nvfp4_columnwise,
    unpack_e2m1_codes,
)
from benchmarks.nvfp4_emulation.e2m1 import e2m1_codes_to_float


def _gaussian(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _block_by_block(a: NVFP4Emulated, b: NVFP4Emulated) -> torch.Tensor:
    """Plain statement of the tensor-core model: for each 16-wide K block, the exact dot products of
    the E2M1 values times the outer product of the two blocks' scales, summed in float32 in K order,
    then times amax_a * amax_b / (36 * 448 * 448)."""
    values_a = e2m1_codes_to_float(unpack_e2m1_codes(a.data.reshape(a.rows, -1)))
    values_b = e2m1_codes_to_float(unpack_e2m1_codes(b.data.reshape(b.rows, -1)))
    out = torch.zeros(a.rows, b.rows)
    for block in range(a.cols // 16):
        columns = slice(16 * block, 16 * block + 16)
        dots = values_a[:, columns].double() @ values_b[:, columns].double().t()
        scales = torch.outer(a.scales[:, block].float(), b.scales[:, block].float())
        out += (scales.double() * dots).float()
    return (a.global_amax * b.global_amax / (6.0 * 6.0 * 448.0 * 448.0)) * out


def test_gemm_equals_the_block_by_block_float32_accumulation_bit_for_bit() -> None:
    a = quantize_nvfp4(_gaussian(48, 512, seed=0) * 3)
    b = quantize_nvfp4(_gaussian(48, 512, seed=1), block_2d=True)
    assert torch.equal(gemm_nvfp4(a, b), _block_by_block(a, b))


def test_gemm_accumulates_in_k_order_not_in_a_single_sum() -> None:
    # a float64 sum of the same terms, rounded once, differs somewhere: the order is observable
    a = quantize_nvfp4(_gaussian(64, 1024, seed=2) * torch.logspace(-2, 2, 1024))
    b = quantize_nvfp4(_gaussian(64, 1024, seed=3))
    once = (dequantize_nvfp4(a).double() @ dequantize_nvfp4(b).double().t()).float()
    assert not torch.equal(gemm_nvfp4(a, b), once)


def test_gemm_agrees_with_float32_matmul_of_dequantized_operands() -> None:
    a = quantize_nvfp4(_gaussian(128, 256, seed=4))
    b = quantize_nvfp4(_gaussian(96, 256, seed=5), block_2d=True)
    expected = dequantize_nvfp4(a).double() @ dequantize_nvfp4(b).double().t()
    torch.testing.assert_close(gemm_nvfp4(a, b).double(), expected, rtol=1e-5, atol=1e-5)


def test_gemm_error_against_the_exact_product_is_that_of_two_fp4_operands() -> None:
    x, w = _gaussian(128, 512, seed=6), _gaussian(64, 512, seed=7)
    exact = x @ w.t()
    out = gemm_nvfp4(quantize_nvfp4(x), quantize_nvfp4(w, block_2d=True))
    error = ((out - exact).norm() / exact.norm()).item()
    assert 0.08 < error < 0.2


@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16])
def test_output_dtype_is_one_cast_of_the_float32_result(out_dtype: torch.dtype) -> None:
    a, b = quantize_nvfp4(_gaussian(32, 64, seed=8)), quantize_nvfp4(_gaussian(16, 64, seed=9))
    out = gemm_nvfp4(a, b, out_dtype)
    assert out.dtype == out_dtype
    assert torch.equal(out, gemm_nvfp4(a, b).to(out_dtype))


def test_leading_dims_of_a_are_kept() -> None:
    x = _gaussian(2, 3, 16, 64, seed=10)
    b = quantize_nvfp4(_gaussian(32, 64, seed=11))
    out = gemm_nvfp4(quantize_nvfp4(x), b)
    assert out.shape == (2, 3, 16, 32)
    assert torch.equal(out.reshape(96, 32), gemm_nvfp4(quantize_nvfp4(x.reshape(96, 64)), b))


def test_wgrad_from_columnwise_operands_approximates_dy_t_x() -> None:
    dy, x = _gaussian(256, 64, seed=12), _gaussian(256, 96, seed=13)  # tokens x features
    exact = dy.t() @ x
    out = gemm_nvfp4(quantize_nvfp4_columnwise(dy, rht=True), quantize_nvfp4_columnwise(x, rht=True))
    assert out.shape == (64, 96)
    assert ((out - exact).norm() / exact.norm()).item() < 0.2


def test_zero_operand_gives_zero_output() -> None:
    a, b = quantize_nvfp4(torch.zeros(16, 32)), quantize_nvfp4(_gaussian(16, 32, seed=14))
    assert torch.equal(gemm_nvfp4(a, b), torch.zeros(16, 16))


def test_k_mismatch_is_rejected() -> None:
    with pytest.raises(ValueError, match="K mismatch"):
        gemm_nvfp4(quantize_nvfp4(torch.ones(16, 32)), quantize_nvfp4(torch.ones(16, 64)))
