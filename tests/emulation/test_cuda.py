"""The emulation on CUDA tensors gives the CPU's bits; importing it does no CUDA work."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.nvfp4_emulation import (
    NVFP4Emulated,
    apply_rht,
    dequantize_nvfp4,
    gemm_nvfp4,
    quantize_nvfp4,
    quantize_nvfp4_columnwise,
    rht_matrix,
)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def _x(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * torch.logspace(-3, 3, shape[-1])).to(dtype)


def _assert_same(gpu: NVFP4Emulated, cpu: NVFP4Emulated) -> None:
    assert gpu.data.is_cuda and gpu.scales.is_cuda and gpu.global_amax.is_cuda
    assert torch.equal(gpu.data.cpu(), cpu.data)
    assert torch.equal(gpu.scales.cpu().view(torch.uint8), cpu.scales.view(torch.uint8))
    assert torch.equal(gpu.global_amax.cpu(), cpu.global_amax)


def test_import_does_not_initialise_cuda() -> None:
    code = "import torch, benchmarks.nvfp4_emulation; print(torch.cuda.is_initialized())"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("block_2d", [False, True])
def test_quantize_on_cuda_matches_cpu_bit_for_bit(dtype: torch.dtype, block_2d: bool) -> None:
    x = _x(256, 512, dtype=dtype)
    _assert_same(quantize_nvfp4(x.cuda(), block_2d=block_2d), quantize_nvfp4(x, block_2d=block_2d))
    _assert_same(
        quantize_nvfp4_columnwise(x.cuda(), block_2d=block_2d),
        quantize_nvfp4_columnwise(x, block_2d=block_2d),
    )


def test_dequantize_and_gemm_on_cuda_match_cpu_bit_for_bit() -> None:
    a, b = _x(128, 256, seed=1), _x(64, 256, seed=2)
    qa, qb = quantize_nvfp4(a), quantize_nvfp4(b, block_2d=True)
    qa_gpu, qb_gpu = quantize_nvfp4(a.cuda()), quantize_nvfp4(b.cuda(), block_2d=True)
    assert torch.equal(dequantize_nvfp4(qa_gpu).cpu(), dequantize_nvfp4(qa))
    assert torch.equal(gemm_nvfp4(qa_gpu, qb_gpu).cpu(), gemm_nvfp4(qa, qb))


def test_rht_on_cuda_computes_the_same_transform() -> None:
    # cuBLAS and the CPU BLAS sum in different orders (and TF32 may be on), so compare with the exact
    # transform, allowing rounding relative to each block's norm
    x = _x(64, 256, seed=3)
    exact = (x.double().view(-1, 16) @ rht_matrix().double()).view(64, 256)
    error = (apply_rht(x.cuda()).cpu().double() - exact).view(-1, 16).norm(dim=1)
    assert torch.all(error <= 2e-3 * x.double().view(-1, 16).norm(dim=1))
    q = quantize_nvfp4_columnwise(x.to(torch.bfloat16).cuda(), rht=True)
    assert q.data.is_cuda and q.global_amax.is_cuda


def test_stochastic_rounding_uses_a_cuda_generator() -> None:
    x = _x(128, 128, seed=4).cuda()
    generator = torch.Generator(device="cuda").manual_seed(5)
    first = quantize_nvfp4(x, stochastic_rounding=True, generator=generator)
    second = quantize_nvfp4(x, stochastic_rounding=True, generator=generator)
    assert not torch.equal(first.data, second.data)
    again = quantize_nvfp4(
        x, stochastic_rounding=True, generator=torch.Generator(device="cuda").manual_seed(5)
    )
    assert torch.equal(first.data, again.data)


def test_compiled_columnwise_rht_quantize_matches_eager_bit_for_bit() -> None:
    # the H200 case: with float32 divisions left to Triton (div.full.f32), 25,374 of 2.1 M scales of this
    # input (the second draw) came out differently under torch.compile
    torch.manual_seed(0)
    torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)

    def columnwise(t: torch.Tensor) -> NVFP4Emulated:
        return quantize_nvfp4_columnwise(t, rht=True)

    eager, compiled = columnwise(dy), torch.compile(columnwise)(dy)
    assert torch.equal(compiled.scales.view(torch.uint8), eager.scales.view(torch.uint8))
    assert torch.equal(compiled.data, eager.data)
