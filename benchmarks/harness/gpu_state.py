"""GPU state (clocks, power, temperature, throttle reasons) through NVML, and the software stack."""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import platform
from typing import Any

# nvmlClocksEventReasons bits (named "throttle reasons" in older NVML)
_THROTTLE_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def throttle_names(mask: int) -> list[str]:
    names = [name for bit, name in _THROTTLE_BITS.items() if mask & bit]
    unknown = mask & ~sum(_THROTTLE_BITS)
    if unknown:
        names.append(f"0x{unknown:x}")
    return names or ["none"]


def nvml_index(cuda_device: int) -> int:
    """NVML's index of CUDA's device `cuda_device`: NVML ignores CUDA_VISIBLE_DEVICES, so device 0 of a
    process started with CUDA_VISIBLE_DEVICES=3 is NVML's GPU 3. TEWATCH_NVML_INDEX overrides device 0."""
    override = os.environ.get("TEWATCH_NVML_INDEX", "").strip()
    if override and cuda_device == 0:
        return int(override)
    from benchmarks.harness.distributed.topology import TopologyError, visible_gpu_indices

    try:
        return visible_gpu_indices(cuda_device + 1)[cuda_device]
    except (TopologyError, IndexError):
        return cuda_device


class Nvml:
    """A thin handle on NVML for one GPU; every read is best effort (None when NVML cannot say)."""

    def __init__(self, index: int = 0) -> None:
        import pynvml

        self._nv = pynvml
        pynvml.nvmlInit()
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)

    @classmethod
    def open(cls, index: int | None = None) -> Nvml | None:
        """NVML's handle on a GPU; by default the one CUDA calls device 0 (see `nvml_index`)."""
        try:
            return cls(nvml_index(0) if index is None else index)
        except Exception:  # no pynvml, no driver, no GPU
            return None

    def _read(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self._nv, name)(self.handle, *args)
        except Exception:
            return None

    def sample(self) -> dict[str, Any]:
        nv = self._nv
        power = self._read("nvmlDeviceGetPowerUsage")
        mask = self._read("nvmlDeviceGetCurrentClocksEventReasons")
        if mask is None:
            mask = self._read("nvmlDeviceGetCurrentClocksThrottleReasons")
        return {
            "sm_clock_mhz": self._read("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM),
            "mem_clock_mhz": self._read("nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM),
            "power_w": None if power is None else power / 1000.0,
            "temperature_c": self._read("nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU),
            "throttle_reasons": None if mask is None else ",".join(throttle_names(mask)),
        }

    def static_info(self) -> dict[str, Any]:
        nv = self._nv
        limit = self._read("nvmlDeviceGetEnforcedPowerManagementLimit")
        app_sm = self._read("nvmlDeviceGetApplicationsClock", nv.NVML_CLOCK_SM)
        default_sm = self._read("nvmlDeviceGetDefaultApplicationsClock", nv.NVML_CLOCK_SM)
        return {
            "sm_clock_max_mhz": self._read("nvmlDeviceGetMaxClockInfo", nv.NVML_CLOCK_SM),
            "mem_clock_max_mhz": self._read("nvmlDeviceGetMaxClockInfo", nv.NVML_CLOCK_MEM),
            "power_limit_w": None if limit is None else limit / 1000.0,
            "applications_sm_clock_mhz": app_sm,
            # application clocks moved off their default (nvidia-smi -ac); -lgc is not visible here
            "clocks_locked": app_sm is not None and default_sm is not None and app_sm != default_sm,
        }

    def driver(self) -> str:
        try:
            value = self._nv.nvmlSystemGetDriverVersion()
            return value.decode() if isinstance(value, bytes) else str(value)
        except Exception:
            return ""


def collect_series(samples: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """[{k: v}, ...] -> {k: [v, ...]} without the Nones (the record's gpu_state)."""
    out: dict[str, list[Any]] = {}
    for sample in samples:
        for key, value in sample.items():
            if value is not None:
                out.setdefault(key, []).append(value)
    return out


def dist_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


def cublaslt_version() -> str:
    """cublasLtGetVersion() of the library torch loaded (or would load)."""
    for lib in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            handle = ctypes.CDLL(lib)
        except OSError:
            continue
        handle.cublasLtGetVersion.restype = ctypes.c_size_t
        return str(handle.cublasLtGetVersion())
    try:
        from pathlib import Path

        import nvidia.cublas  # the pip wheel torch depends on

        for path in sorted(Path(nvidia.cublas.__path__[0], "lib").glob("libcublasLt.so*")):
            handle = ctypes.CDLL(str(path))
            handle.cublasLtGetVersion.restype = ctypes.c_size_t
            return str(handle.cublasLtGetVersion())
    except Exception:
        pass
    return ""


def software_versions(torch: Any | None = None, nvml: Nvml | None = None) -> dict[str, str]:
    """Versions of everything that changes what a case measures. Never imports TE."""
    versions = {
        "python": platform.python_version(),
        "torch": getattr(torch, "__version__", "") if torch is not None else dist_version("torch"),
        "te": dist_version("transformer_engine") or dist_version("transformer-engine"),
        "triton": dist_version("triton"),
        "asv": dist_version("asv"),
        "asv_runner": dist_version("asv_runner"),
        "nvidia_ml_py": dist_version("nvidia-ml-py"),
        "cuda": "",
        "cudnn": "",
        "cublaslt": "",
        "driver": nvml.driver() if nvml is not None else "",
    }
    if torch is not None:
        versions["cuda"] = torch.version.cuda or ""
        try:
            cudnn = torch.backends.cudnn.version()
            versions["cudnn"] = str(cudnn) if cudnn else ""
        except Exception:
            pass
        if torch.cuda.is_available():
            versions["cublaslt"] = cublaslt_version()
    return versions
