"""The scale arithmetic is correctly rounded float32 on every backend (exact_div)."""

import torch

from benchmarks.nvfp4_emulation.scaling import block_encode_scales, exact_div, global_encode_scale


def _float32_over_every_binade(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    mantissa = torch.rand(n, generator=g) + 0.5
    return torch.ldexp(mantissa, torch.randint(-140, 127, (n,), generator=g)).float()


def test_exact_div_is_ieee_float32_division_bit_for_bit() -> None:
    a, b = _float32_over_every_binade(1_000_000, 1), _float32_over_every_binade(1_000_000, 2)
    b[:10] = 0.0  # a quotient by zero is inf, as in float32
    for numerator, denominator, expected in (
        (a, b, torch.div(a, b)),
        (1.0, b, torch.reciprocal(b)),
        (2688.0, b, torch.div(2688.0, b)),
    ):
        got = exact_div(numerator, denominator)
        assert got.dtype == torch.float32
        assert torch.equal(got.view(torch.int32), expected.view(torch.int32))


def test_scales_keep_their_edge_cases() -> None:
    amax = torch.tensor([0.0, 5.875, float("inf")])
    encode = global_encode_scale(amax)
    assert encode[0] == torch.finfo(torch.float32).max  # amax 0: capped
    assert encode[1] == torch.div(torch.tensor(2688.0), torch.tensor(5.875))
    assert encode[2] == 1.0  # a scale of 0 is replaced by 1
    decode = torch.tensor([0.0, 1.0, 448.0]).to(torch.float8_e4m3fn)
    factors = block_encode_scales(decode, torch.tensor(457.53192138671875))
    assert factors[0] == torch.finfo(torch.float32).max  # a zero block scale gives the cap
    global_decode = torch.reciprocal(torch.tensor(457.53192138671875))
    assert torch.equal(factors[1:], torch.reciprocal(decode[1:].float() * global_decode))
