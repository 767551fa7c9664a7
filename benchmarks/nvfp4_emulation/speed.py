"""How long the emulation takes, as a table: ``python -m benchmarks.nvfp4_emulation.speed``.

    python -m benchmarks.nvfp4_emulation.speed --device cuda --shape 8192x5120 --gemm 8192x5120x5120
    python -m benchmarks.nvfp4_emulation.speed --device cpu --shape 256x512 --gemm 256x512x256

Medians of ``torch.utils.benchmark.Timer.blocked_autorange`` (which synchronises CUDA), in ms.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
from torch.utils import benchmark

from . import apply_rht, dequantize_nvfp4, gemm_nvfp4, quantize_nvfp4, quantize_nvfp4_columnwise


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.lower().split("x"))


def _cases(shape: tuple[int, ...], gemm: tuple[int, ...], device: str) -> dict[str, Callable[[], object]]:
    g = torch.Generator(device=device).manual_seed(0)
    x = torch.randn(shape, generator=g, device=device, dtype=torch.bfloat16)
    q = quantize_nvfp4(x)
    m, k, n = gemm
    a = quantize_nvfp4(torch.randn(m, k, generator=g, device=device, dtype=torch.bfloat16))
    b = quantize_nvfp4(torch.randn(n, k, generator=g, device=device, dtype=torch.bfloat16), block_2d=True)
    return {
        f"quantize rowwise {shape}": lambda: quantize_nvfp4(x),
        f"quantize rowwise 16x16 {shape}": lambda: quantize_nvfp4(x, block_2d=True),
        f"quantize rowwise SR {shape}": lambda: quantize_nvfp4(x, stochastic_rounding=True, generator=g),
        f"quantize columnwise {shape}": lambda: quantize_nvfp4_columnwise(x),
        f"quantize columnwise RHT {shape}": lambda: quantize_nvfp4_columnwise(x, rht=True),
        f"RHT alone {shape}": lambda: apply_rht(x),
        f"dequantize {shape}": lambda: dequantize_nvfp4(q, torch.bfloat16),
        f"GEMM {m}x{k}x{n}": lambda: gemm_nvfp4(a, b, torch.bfloat16),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--shape", default="256x512", help="MxK of the quantize cases")
    parser.add_argument("--gemm", default="256x512x256", help="MxKxN of the GEMM case")
    parser.add_argument("--min-run-time", type=float, default=1.0, help="seconds per case")
    args = parser.parse_args(argv)
    cases = _cases(_dims(args.shape), _dims(args.gemm), args.device)
    print(f"device {args.device}: {torch.cuda.get_device_name() if args.device == 'cuda' else 'cpu'}")
    print(f"{'case':<48} {'median ms':>10} {'IQR ms':>9} {'runs':>6}")
    for name, fn in cases.items():
        measurement = benchmark.Timer("fn()", globals={"fn": fn}).blocked_autorange(
            min_run_time=args.min_run_time
        )
        print(
            f"{name:<48} {measurement.median * 1e3:>10.3f} {measurement.iqr * 1e3:>9.3f} {len(measurement.times):>6}"
        )


if __name__ == "__main__":
    main()
