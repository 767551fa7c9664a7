"""Which buffers of a quantized tensor the checks compare. TE 2.19 declares them (`_INNER_TENSORS`, from
TE's commit bf4b2b9f8); TE 2.18 and earlier keep them as plain attributes and declare none, where the
checks once found no buffer and passed on comparing nothing (found by bisecting contracts.CheckpointParity
on an H200: tests/fixtures/h200-bisect-te)."""

from __future__ import annotations

import pytest
import torch

from benchmarks.harness import te_ops
from benchmarks.harness.numerics import NoBuffers, differing_buffers


class Float8Storage218:
    """The attributes of TE 2.18's Float8TensorStorage, which declares no inner tensors."""

    def __init__(self, transpose_invalid: bool) -> None:
        self._data = torch.arange(8, dtype=torch.uint8).reshape(2, 4)
        self._transpose = self._data.t().contiguous()
        self._transpose_invalid = transpose_invalid
        self._scale_inv = torch.ones(1)
        self._fp8_dtype = "E4M3"


class Float8Storage219(Float8Storage218):
    _INNER_TENSORS = (("_data", "data"), ("_transpose", "data_transpose"), ("_scale_inv", "fp8_scale_inv"))


def test_undeclared_buffers_are_the_tensor_attributes() -> None:
    assert sorted(te_ops.inner_buffers(Float8Storage218(False))) == ["_data", "_scale_inv", "_transpose"]
    assert sorted(te_ops.valid_buffers(Float8Storage218(True))) == ["_data", "_scale_inv"]


def test_declared_buffers_are_read_from_the_declaration() -> None:
    t = Float8Storage219(False)
    t._transpose = None
    assert sorted(te_ops.inner_buffers(t)) == ["_data", "_scale_inv"]


def test_a_round_trip_that_drops_the_transpose_differs_on_either_release() -> None:
    for cls in (Float8Storage218, Float8Storage219):
        original, loaded = cls(False), cls(False)
        loaded._transpose = None
        assert differing_buffers(te_ops.valid_buffers(original), te_ops.valid_buffers(loaded)) == [
            "_transpose"
        ]


def test_comparing_no_buffers_is_an_error_not_a_pass() -> None:
    with pytest.raises(NoBuffers):
        differing_buffers({}, {})
