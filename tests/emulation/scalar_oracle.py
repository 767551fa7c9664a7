"""NVFP4 quantization written out one value at a time with Python floats: a second, loop-based
statement of the arithmetic that the vectorised emulation must reproduce bit for bit.

Every float32 step is ``_f32(a <op> b)``: the exact double result rounded once to float32, which equals
float32 arithmetic for + - * / (double has more than 2 * 24 + 2 bits). The E4M3 and E2M1 roundings are
derived here from the formats' definitions, not from torch.
"""

from __future__ import annotations

import math

import numpy as np

FP32_MAX = float(np.finfo(np.float32).max)
E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _f32(value: float) -> float:
    with np.errstate(over="ignore"):  # beyond float32 range -> inf, like float32 arithmetic
        return float(np.float32(value))


def e4m3_round(value: float) -> float:
    """Nearest E4M3 (fn) value, ties to even, for 0 <= value <= 448 (E4M3: bias 7, 3 mantissa bits,
    smallest normal 2**-6, subnormal step 2**-9)."""
    if value == 0.0:
        return 0.0
    _, exponent = math.frexp(value)  # value = m * 2**exponent, 0.5 <= m < 1
    unit = 2.0 ** (max(exponent - 1, -6) - 3)
    return round(value / unit) * unit  # round() on floats: half to even, exact here


def e2m1_code(value: float) -> int:
    """Code of a value in [-6, 6]: nearest grid magnitude, ties to the even code; sign bit when the
    value is negative (so -0.1 -> -0.0 and -0.0 -> +0.0, as in TE's reference)."""
    magnitude = abs(value)
    distances = [abs(magnitude - g) for g in E2M1_GRID]
    best = min(distances)
    candidates = [i for i, d in enumerate(distances) if d == best]
    index = next((i for i in candidates if i % 2 == 0), candidates[0])
    return index | (8 if value < 0 else 0)


def quantize_rows(
    rows: list[list[float]], tile_rows: int = 1
) -> tuple[list[list[int]], list[list[float]], float]:
    """(codes, block scales, global amax) of a matrix given as lists of exactly representable floats;
    ``tile_rows=16`` gives 16x16 tiles."""
    m, k = len(rows), len(rows[0])
    global_amax = max(abs(v) for row in rows for v in row)
    encode = FP32_MAX if global_amax == 0 else min(_f32(2688.0 / global_amax), FP32_MAX)
    encode = 1.0 if encode == 0.0 else encode
    multiplier = _f32(encode * _f32(1.0 / 6.0))
    global_decode = _f32(1.0 / encode)
    codes = [[0] * k for _ in range(m)]
    scales = [[0.0] * (k // 16) for _ in range(m)]
    for r in range(m):
        tile_top = r - r % tile_rows
        for b in range(k // 16):
            cols = range(16 * b, 16 * b + 16)
            block_amax = max(abs(rows[t][c]) for t in range(tile_top, tile_top + tile_rows) for c in cols)
            scale = e4m3_round(min(_f32(block_amax * multiplier), 448.0))
            product = _f32(scale * global_decode)
            block_encode = FP32_MAX if product == 0.0 else min(_f32(1.0 / product), FP32_MAX)
            scales[r][b] = scale
            for c in cols:
                scaled = _f32(rows[r][c] * block_encode)
                codes[r][c] = e2m1_code(max(-6.0, min(6.0, scaled)))
    return codes, scales, global_amax


def decode(code: int, scale: float, global_amax: float) -> float:
    """TE's dequantize: ``e2m1 * ((scale * amax) * float32(1/2688))`` in float32."""
    factor = _f32(_f32(scale * global_amax) * _f32(1.0 / 2688.0))
    value = E2M1_GRID[code & 7] * (-1.0 if code & 8 else 1.0)
    return _f32(value * factor)
