"""Contracts of quantized tensors that no kernel timing would catch.

ShapeContract   the shapes a quantizer predicts for tracing (inner_tensor_specs, which uses
                get_columnwise_shape) against the buffers make_empty really allocates, ranks 2D/3D/4D;
                pure allocation, so it runs on any CUDA GPU (NVFP4 included).
CpuRoundTrip    a quantized tensor moved to the CPU still computes (`.cpu() + 0`) and equals the
                device's dequantized values.
CheckpointParity torch.save / torch.load of a quantized tensor is bit for bit.
RefParity       the project's emulation (torch-ref) against TE's NVFP4QuantizerRef, bit for bit.

NVFP4/MXFP8 tensors on GPUs without their kernels are built with make_empty and filled with valid
codes, so no native quantize kernel ever runs where it cannot.
"""

from __future__ import annotations

import io
from typing import Any

from benchmarks.harness import gates, records
from benchmarks.harness.case import Case, Prepared, Unsupported
from benchmarks.harness.numerics import bytes_equal, differing_buffers, error_metrics, max_abs_difference
from benchmarks.harness.profiles import Profile, current_profile, selected_backends, spread_over_rank

_PROFILE = current_profile()
_TE = "te" in selected_backends()
TE_QUANTIZERS = ["nvfp4", "nvfp4-rht", "nvfp4-2d", "fp8-current", "fp8-block", "mxfp8", "fp8-delayed"]
# one quantizer per format: the checks of a tensor rather than of a quantizer's options
TE_TENSOR_QUANTIZERS = ["nvfp4", "mxfp8", "fp8-current", "fp8-block", "fp8-delayed"]
ROUND_TRIP_QUANTIZERS = (TE_TENSOR_QUANTIZERS if _TE else []) + (
    ["torch-ref"] if "torch-ref" in selected_backends() else []
)


class ShapeContractMismatch(AssertionError):
    """The shapes predicted for tracing differ from the buffers really allocated."""


def quantizer_backend(quantizer: str) -> str:
    return "torch-ref" if quantizer.startswith("torch-ref") else "te"


def quantizer_recipe(quantizer: str) -> str:
    return "nvfp4" if quantizer.startswith(("nvfp4", "torch-ref")) else quantizer


def _te_tensor(kind: str, shape: tuple[int, ...], x: Any) -> Any:
    """A quantized tensor of `kind`: really quantized where the device can, else allocated + filled."""
    import torch

    from benchmarks.harness import te_ops

    q = te_ops.quantizer(kind)
    caps = gates.current_capabilities(needs_te=True)
    if gates.unsupported_reason("te", kind, caps, "cuda") is None:
        with torch.no_grad():
            return q(x)
    t = q.make_empty(shape, dtype=torch.bfloat16, device="cuda")
    te_ops.fill_valid(t, torch.Generator().manual_seed(0))
    return t


def _dequantize_or_unsupported(kind: str, q: Any) -> Any:
    """The device's dequantized values; a format whose kernels this GPU lacks (TE refuses with a
    RuntimeError, e.g. MXFP8 below sm_100) is unsupported, not a failure of the round trip."""
    try:
        return q.dequantize().float().cpu()
    except RecursionError:  # a RuntimeError too, but a Python-level bug whatever the GPU
        raise
    except RuntimeError as exc:
        reason = gates.unsupported_reason("te", kind, gates.current_capabilities(needs_te=True), "cuda")
        if reason:
            raise Unsupported(f"{reason} ({exc})") from exc
        raise


def predicted_shapes(quantizer: Any, shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """The inner buffers' shapes a quantizer predicts for tracing; unsupported where it predicts none."""
    specs_of = getattr(quantizer, "inner_tensor_specs", None)
    if specs_of is None:  # TE 2.18 and before
        raise Unsupported(
            f"{type(quantizer).__name__} predicts no shapes for tracing (no inner_tensor_specs)"
        )
    try:
        specs = specs_of(shape)
    except NotImplementedError as exc:  # by design, e.g. delayed scaling is not traceable
        raise Unsupported(f"{type(quantizer).__name__} has no tracing contract: {exc}") from exc
    return {name: tuple(s) for name, (s, _) in specs.items()}


class _ContractCase(Case):
    """Contract cases need CUDA for `te` (not the kernels of the format) and nothing for torch-ref."""

    one_shot = True

    def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
        backend = self.labels(p)["backend"]
        return backend, "bf16" if backend == "te" else "nvfp4"


if _TE:

    class ShapeContract(_ContractCase):
        param_names = ["quantizer", "rank"]
        params = [TE_QUANTIZERS, list(_PROFILE.contract_ranks)]
        op = "shape_contract"
        main_check = "shape_contract"

        def labels(self, p: dict[str, Any]) -> dict[str, Any]:
            return {
                "backend": "te",
                "recipe": quantizer_recipe(p["quantizer"]),
                "variant": p["quantizer"],
                "rank": p["rank"],
                "op": self.op,
            }

        def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
            import torch

            from benchmarks.harness import te_ops

            shape = spread_over_rank(*profile.contract_shape, p["rank"])
            q = te_ops.quantizer(p["quantizer"])
            predicted = predicted_shapes(q, shape)
            real_tensor = q.make_empty(shape, dtype=torch.bfloat16, device="cuda")
            real = {name: tuple(t.shape) for name, t in te_ops.inner_buffers(real_tensor).items()}
            wrong = {
                n: (predicted.get(n), real.get(n))
                for n in sorted(set(predicted) | set(real))
                if predicted.get(n) != real.get(n)
            }
            if wrong:
                listed = "; ".join(f"{n}: predicted {a}, allocated {b}" for n, (a, b) in wrong.items())
                raise ShapeContractMismatch(f"{type(q).__name__} for logical shape {shape}: {listed}")
            self.record.add(
                records.Check(
                    check="shape_contract",
                    status="pass",
                    details={"shapes": {n: list(s) for n, s in real.items()}},
                )
            )
            return Prepared(fn=lambda: q.make_empty(shape, dtype=torch.bfloat16, device="cuda"), device="cpu")


class _PerQuantizerCase(_ContractCase):
    """A check of one quantized tensor per quantizer, built from the same seeded 2D input."""

    param_names = ["quantizer"]
    params = [ROUND_TRIP_QUANTIZERS]

    def labels(self, p: dict[str, Any]) -> dict[str, Any]:
        return {
            "backend": quantizer_backend(p["quantizer"]),
            "recipe": quantizer_recipe(p["quantizer"]),
            "variant": p["quantizer"],
            "op": self.op,
        }

    @staticmethod
    def seeded_input(p: dict[str, Any], profile: Profile) -> tuple[tuple[int, ...], Any]:
        import torch

        shape = spread_over_rank(*profile.contract_shape, 2)
        torch.manual_seed(0)
        device = "cuda" if quantizer_backend(p["quantizer"]) == "te" else profile.device
        return shape, torch.randn(shape, dtype=torch.bfloat16, device=device)


class CpuRoundTrip(_PerQuantizerCase):
    op = "cpu_round_trip"
    main_check = "cpu_round_trip"

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        shape, x = self.seeded_input(p, profile)
        if p["quantizer"] == "torch-ref":
            from benchmarks import nvfp4_emulation as emu

            q = emu.quantize_nvfp4(x)
            expected = emu.dequantize_nvfp4(q, torch.float32).cpu()
            on_cpu = _emulated_to(q, "cpu")
            got = emu.dequantize_nvfp4(on_cpu, torch.float32) + 0
            fn = lambda: _emulated_to(q, "cpu")  # noqa: E731
        else:
            q = _te_tensor(p["quantizer"], shape, x)
            expected = _dequantize_or_unsupported(p["quantizer"], q)
            got = (q.cpu() + 0).float()
            fn = lambda: q.cpu()  # noqa: E731
        diff = max_abs_difference(got, expected)
        self.record.add(records.compare("cpu_round_trip", "max_abs_diff", diff, 0.0))
        with self.optional("error metrics"):
            self.record.errors("cpu_vs_gpu", error_metrics(got, expected))
        return Prepared(fn=fn, device="cpu")


class CheckpointParity(_PerQuantizerCase):
    op = "checkpoint"
    main_check = "checkpoint_bitwise"

    def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
        import torch

        shape, x = self.seeded_input(p, profile)
        if p["quantizer"] == "torch-ref":
            from benchmarks import nvfp4_emulation as emu

            q = emu.quantize_nvfp4(x)
            buffers = lambda t: {"data": t.data, "scales": t.scales, "global_amax": t.global_amax}  # noqa: E731
        else:
            from benchmarks.harness import te_ops

            q = _te_tensor(p["quantizer"], shape, x)
            buffers = te_ops.valid_buffers

        def round_trip() -> Any:
            blob = io.BytesIO()
            torch.save(q, blob)
            blob.seek(0)
            return torch.load(blob, weights_only=False)

        loaded = round_trip()
        before, after = buffers(q), buffers(loaded)
        differing = differing_buffers(before, after)
        if type(loaded) is not type(q):
            differing.append(f"type {type(loaded).__name__} != {type(q).__name__}")
        self.record.add(
            records.Check(
                check="checkpoint_bitwise",
                status="fail_accuracy" if differing else "pass",
                metric="differing_buffers",
                value=float(len(differing)),
                tolerance=0.0,
                details={"differing": differing} if differing else None,
            )
        )
        return Prepared(fn=round_trip, device="cpu")


if _TE or "te-ref" in selected_backends():

    class RefParity(Case):
        """torch-ref against TE's NVFP4QuantizerRef: data, scales and amax bit for bit."""

        param_names = ["variant"]
        params = [["nvfp4-row", "nvfp4-rht", "nvfp4-2d"]]
        op = "ref_parity"
        main_check = "emulation_vs_reference"
        one_shot = True

        def labels(self, p: dict[str, Any]) -> dict[str, Any]:
            return {"backend": "te-ref", "recipe": "nvfp4", "variant": p["variant"], "op": self.op}

        def gate_key(self, p: dict[str, Any]) -> tuple[str, str]:
            return "te-ref", "nvfp4"

        def prepare(self, p: dict[str, Any], profile: Profile) -> Prepared:
            import torch

            from benchmarks import nvfp4_emulation as emu
            from benchmarks.harness import te_ops

            torch.manual_seed(0)
            x = torch.randn(spread_over_rank(*profile.contract_shape, 2), dtype=torch.bfloat16, device="cuda")
            variant = p["variant"]
            ref = te_ops.reference_quantizer(variant).quantize(x)
            block_2d = variant == "nvfp4-2d"
            ours_row = emu.quantize_nvfp4(x, block_2d=block_2d)
            pairs = {
                "data": (ours_row.data, ref.data),
                "scales": (ours_row.scales, _valid(ref.scale, ours_row)),
                "amax": (ours_row.global_amax, ref.global_amax_row),
            }
            if ref.data_t is not None:  # row-wise-only variants carry no column-wise data
                ours_col = emu.quantize_nvfp4_columnwise(x, block_2d=block_2d, rht=variant == "nvfp4-rht")
                pairs |= {
                    "data_t": (ours_col.data, ref.data_t),
                    "scales_t": (ours_col.scales, _valid(ref.scale_t, ours_col)),
                    "amax_t": (ours_col.global_amax, ref.global_amax_col),
                }
            differing = sorted(n for n, (a, b) in pairs.items() if not bytes_equal(a, b))
            with self.optional("error metrics"):
                ours = emu.dequantize_nvfp4(ours_row, torch.float32).reshape(x.shape)
                self.record.errors(
                    "emulation_vs_reference", error_metrics(ours, te_ops.dequantize_reference(ref))
                )
            self.record.add(
                records.Check(
                    check="emulation_vs_reference",
                    status="fail_accuracy" if differing else "pass",
                    metric="differing_buffers",
                    value=float(len(differing)),
                    tolerance=0.0,
                    details={"differing": differing} if differing else None,
                )
            )
            return Prepared(fn=lambda: emu.quantize_nvfp4(x, block_2d=block_2d), device="cuda")


def _valid(scale: Any, ours: Any) -> Any:
    """The unpadded (rows, cols/16) region of a reference scale tensor, in the emulation's dtype."""
    import torch

    region = scale[: ours.rows, : ours.cols // 16]
    return region.view(torch.float8_e4m3fn) if region.dtype == torch.uint8 else region


def _emulated_to(q: Any, device: str) -> Any:
    import dataclasses

    return dataclasses.replace(
        q, data=q.data.to(device), scales=q.scales.to(device), global_amax=q.global_amax.to(device)
    )
