"""The 16x16 random Hadamard transform: matrix, orthogonality, inverse, and what it does for outliers."""

import pytest
import torch

from benchmarks.nvfp4_emulation import (
    DEFAULT_RHT_SIGNS,
    apply_rht,
    default_rht_signs,
    dequantize_nvfp4,
    gemm_nvfp4,
    hadamard_matrix,
    quantize_nvfp4,
    quantize_nvfp4_columnwise,
    rht_matrix,
)

ALL_PLUS = [1.0] * 16


def _sylvester(size: int) -> torch.Tensor:
    h = torch.ones(1, 1)
    while h.shape[0] < size:
        h = torch.cat([torch.cat([h, h], dim=1), torch.cat([h, -h], dim=1)])
    return h


def test_hadamard_matrix_is_the_sylvester_construction() -> None:
    for size in (1, 2, 4, 16, 32):
        assert torch.equal(hadamard_matrix(size), _sylvester(size))
    with pytest.raises(ValueError, match="power of two"):
        hadamard_matrix(12)


def test_default_signs_are_transformer_engines_vector() -> None:
    te_signs = [1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1]
    assert default_rht_signs().tolist() == te_signs
    assert list(DEFAULT_RHT_SIGNS) == te_signs


def test_rht_matrix_is_sign_flipped_rows_of_h16_over_4() -> None:
    matrix = rht_matrix()
    expected = torch.tensor(DEFAULT_RHT_SIGNS)[:, None] * _sylvester(16) / 4
    assert torch.equal(matrix, expected)
    assert torch.equal(rht_matrix(ALL_PLUS), _sylvester(16) / 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("signs", [None, ALL_PLUS])
def test_rht_matrix_is_orthonormal_exactly(dtype: torch.dtype, signs: list[float] | None) -> None:
    matrix = rht_matrix(signs, dtype)
    assert matrix.dtype == dtype
    assert torch.equal((matrix.float() @ matrix.float().t()), torch.eye(16))


def test_inverse_undoes_the_transform_and_norms_are_kept() -> None:
    x = torch.randn(8, 4, 64, generator=torch.Generator().manual_seed(0))
    y = apply_rht(x)
    assert y.shape == x.shape and not torch.allclose(y, x)
    torch.testing.assert_close(apply_rht(y, inverse=True), x, rtol=0, atol=1e-6)
    torch.testing.assert_close(y.view(-1, 16).norm(dim=1), x.view(-1, 16).norm(dim=1), rtol=1e-6, atol=0)


def test_without_sign_flips_the_transform_is_its_own_inverse() -> None:
    x = torch.randn(32, 48, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(apply_rht(apply_rht(x, ALL_PLUS), ALL_PLUS), x, rtol=0, atol=1e-6)
    # with TE's signs, applying twice is not the identity
    assert not torch.allclose(apply_rht(apply_rht(x)), x, atol=1e-3)


def test_rht_acts_on_each_16_block_of_the_last_dimension_independently() -> None:
    x = torch.zeros(2, 32)
    x[0, 17] = 1.0
    y = apply_rht(x)
    assert y[0, :16].abs().sum() == 0 and y[1].abs().sum() == 0
    assert torch.equal(y[0, 16:], rht_matrix()[1])


def test_bf16_input_is_transformed_in_bf16() -> None:
    x = torch.randn(16, 32).to(torch.bfloat16)
    assert apply_rht(x).dtype == torch.bfloat16


def test_rht_needs_a_last_dimension_divisible_by_16() -> None:
    with pytest.raises(ValueError, match="multiple of 16"):
        apply_rht(torch.ones(4, 40))


def test_rht_spreads_an_outlier_over_its_block() -> None:
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(2))
    x[:, 5::16] *= 40.0  # one outlier in every 16-block

    def crest_factor(t: torch.Tensor) -> torch.Tensor:  # block amax over block RMS
        blocks = t.view(-1, 16)
        return blocks.abs().amax(dim=1) / blocks.pow(2).mean(dim=1).sqrt()

    assert crest_factor(x).median() > 3.5  # close to sqrt(16): one value holds the energy
    assert crest_factor(apply_rht(x)).median() < 1.5


def _gaussian_with_one_huge_outlier(rows: int, cols: int, seed: int) -> torch.Tensor:
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed))
    x[0, 0] = 1e6  # sets the global amax: other blocks' E4M3 scales fall to the subnormal range
    return x


def test_rht_reduces_the_error_a_huge_outlier_causes_in_all_other_blocks() -> None:
    x = _gaussian_with_one_huge_outlier(256, 512, seed=3)
    others = torch.ones_like(x, dtype=torch.bool)
    others[0, :16] = False

    def error_elsewhere(approx: torch.Tensor) -> float:
        return ((approx - x)[others].norm() / x[others].norm()).item()

    plain = error_elsewhere(dequantize_nvfp4(quantize_nvfp4(x)))
    with_rht = error_elsewhere(apply_rht(dequantize_nvfp4(quantize_nvfp4(x, rht=True)), inverse=True))
    assert plain > 0.5
    assert with_rht < 0.2


def test_rht_on_both_operands_along_k_keeps_the_product_and_lowers_gemm_error() -> None:
    a = _gaussian_with_one_huge_outlier(64, 256, seed=4)
    b = torch.randn(32, 256, generator=torch.Generator().manual_seed(5))
    exact = (a @ b.t())[1:]  # rows that do not meet the outlier

    def error(out: torch.Tensor) -> float:
        return ((out[1:] - exact).norm() / exact.norm()).item()

    assert error(apply_rht(a) @ apply_rht(b).t()) < 1e-5  # (aH)(bH)^T == a b^T
    plain = gemm_nvfp4(quantize_nvfp4(a), quantize_nvfp4(b))
    with_rht = gemm_nvfp4(quantize_nvfp4(a, rht=True), quantize_nvfp4(b, rht=True))
    assert error(with_rht) < 0.5 * error(plain)


def test_columnwise_rht_transforms_along_the_original_rows() -> None:
    x = torch.randn(32, 48, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    col = quantize_nvfp4_columnwise(x, rht=True)
    expected = quantize_nvfp4(apply_rht(x.t().contiguous()))
    assert col.rht and col.columnwise
    assert torch.equal(col.data, expected.data)
    assert torch.equal(col.global_amax, expected.global_amax)  # post-RHT amax
    assert col.global_amax.item() != x.float().abs().max().item()


def test_custom_signs_change_the_result() -> None:
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(6))
    default = quantize_nvfp4(x, rht=True)
    plain_h = quantize_nvfp4(x, rht=True, rht_signs=torch.ones(16))
    assert not torch.equal(default.data, plain_h.data)
