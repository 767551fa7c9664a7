"""The vectorised emulation against the value-by-value statement of the same arithmetic."""

import pytest
import torch

from benchmarks.nvfp4_emulation import dequantize_nvfp4, quantize_nvfp4, unpack_e2m1_codes

from . import scalar_oracle


def _inputs() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(11)
    wide = torch.randn(32, 64, generator=g) * torch.logspace(-8, 4, 64)
    mixed = torch.randn(32, 64, generator=g)
    mixed[::3, :16] = 0.0
    mixed[1::4, 16:32] *= 1e-5  # block scales near and below the E4M3 subnormal range
    mixed[5, 40] = 700.0
    grid = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0])
    ties = grid[torch.randint(0, 8, (32, 64), generator=g)] * torch.randint(-1, 2, (32, 64), generator=g)
    return {
        "gaussian_bf16": torch.randn(32, 64, generator=g).to(torch.bfloat16),
        "wide_range": wide,
        "zeros_tiny_outlier": mixed,
        "ties": ties * 7.0,
        "uniform_fp16": (torch.rand(32, 64, generator=g) * 200 - 100).to(torch.float16),
    }


@pytest.mark.parametrize("name", list(_inputs()))
@pytest.mark.parametrize("block_2d", [False, True])
def test_emulation_matches_the_scalar_oracle_bit_for_bit(name: str, block_2d: bool) -> None:
    x = _inputs()[name]
    codes, scales, global_amax = scalar_oracle.quantize_rows(x.float().tolist(), 16 if block_2d else 1)
    q = quantize_nvfp4(x, block_2d=block_2d)
    assert q.global_amax.item() == global_amax
    assert q.scales.float().tolist() == scales
    assert unpack_e2m1_codes(q.data).tolist() == codes
    expected = [
        [scalar_oracle.decode(c, scales[r][i // 16], global_amax) for i, c in enumerate(row)]
        for r, row in enumerate(codes)
    ]
    assert dequantize_nvfp4(q).tolist() == expected
