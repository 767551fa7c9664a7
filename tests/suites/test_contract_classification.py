"""A contract check that reaches a kernel this GPU lacks is `unsupported`; any other failure stays one."""

import json

import pytest

from benchmarks import contracts
from benchmarks.harness import gates
from benchmarks.harness.case import Unsupported

YES = (True, "")
MXFP8_NO = (False, "Device compute capability 10.0 or higher required for MXFP8 execution.")
NVFP4_NO = (False, "Device compute capability 10.0 or higher required for NVFP4 execution.")
H200 = gates.Capabilities(cuda=YES, fp8=YES, fp8_block=YES, mxfp8=MXFP8_NO, nvfp4=NVFP4_NO)


class RefusingTensor:
    """What TE 2.20.2 did on the H200: MXFP8 dequantize raised from its CUDA dispatch."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def dequantize(self):
        raise self.error


@pytest.fixture(autouse=True)
def h200_capabilities(monkeypatch):
    monkeypatch.setenv(gates.CAPABILITIES_ENV, json.dumps(H200.to_json()))


def test_a_kernel_the_gpu_lacks_makes_the_round_trip_unsupported() -> None:
    refused = RuntimeError(
        "dequantize.cuh:46 in function dequantize_helper: MXFP8 Dequantization is NOT "
        "supported by architectures < 10.0"
    )
    with pytest.raises(Unsupported, match=r"10.0 or higher required for MXFP8"):
        contracts._dequantize_or_unsupported("mxfp8", RefusingTensor(refused))


def test_the_same_error_on_a_format_the_gpu_supports_is_a_failure() -> None:
    with pytest.raises(RuntimeError, match="broken"):
        contracts._dequantize_or_unsupported("fp8-current", RefusingTensor(RuntimeError("broken")))


def test_a_python_bug_is_never_unsupported_even_without_the_kernels() -> None:
    with pytest.raises(RecursionError):
        contracts._dequantize_or_unsupported("nvfp4", RefusingTensor(RecursionError("maximum recursion")))
