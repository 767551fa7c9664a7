"""What the suites need from TE under the names each release gives it: the NVFP4 reference modules
(renamed in 2.19) and the quantizers' tracing shapes (absent before 2.19). Packages laid out as each
release lays them out, since no TE installs here."""

import sys
from pathlib import Path

import pytest

from benchmarks.contracts import predicted_shapes
from benchmarks.harness.case import Unsupported
from benchmarks.harness.te_ops import reference_recipes

LAYOUTS = {
    "2.19": {
        "reference_nvfp4.py": "class NVFP4QuantizerRef: pass\ndef nvfp4_ref_rht_2d_factory(role): return role\n",
        "reference_utils.py": "class Fp4Formats: E2M1 = 'e2m1'\n",
        "utils.py": "raise AssertionError('2.19 reads reference_utils')\n",
    },
    "2.18": {
        "quantization_ref_nvfp4.py": (
            "class NVFP4QuantizerRef: pass\ndef nvfp4_ref_rht_2d_quantizer_factory(role): return role\n"
        ),
        "utils.py": "class Fp4Formats: E2M1 = 'e2m1'\n",
    },
}


@pytest.fixture
def recipes_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def lay_out(release: str) -> str:
        package = f"custom_recipes_{release.replace('.', '_')}"
        folder = tmp_path / package
        folder.mkdir()
        (folder / "__init__.py").write_text("")
        for name, text in LAYOUTS[release].items():
            (folder / name).write_text(text)
        monkeypatch.syspath_prepend(str(tmp_path))
        return package

    yield lay_out
    for name in [m for m in sys.modules if m.startswith("custom_recipes_")]:
        del sys.modules[name]


@pytest.mark.parametrize("release", sorted(LAYOUTS))
def test_the_reference_recipes_are_found_under_each_releases_names(recipes_package, release):
    found = reference_recipes(recipes_package(release))
    assert found.ref.NVFP4QuantizerRef.__name__ == "NVFP4QuantizerRef"
    assert found.utils.Fp4Formats.E2M1 == "e2m1"
    assert found.rht_2d_factory("weight") == "weight"


def test_a_release_without_a_reference_says_which_names_it_looked_for(tmp_path, monkeypatch):
    (tmp_path / "no_recipes").mkdir()
    (tmp_path / "no_recipes" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError, match="reference_nvfp4, quantization_ref_nvfp4"):
        reference_recipes("no_recipes")


def test_a_broken_reference_module_is_not_taken_for_a_missing_one(tmp_path, monkeypatch):
    (tmp_path / "broken_recipes").mkdir()
    (tmp_path / "broken_recipes" / "__init__.py").write_text("")
    (tmp_path / "broken_recipes" / "reference_nvfp4.py").write_text("import a_module_nobody_has\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="a_module_nobody_has"):
        reference_recipes("broken_recipes")


class _Predicting:
    def inner_tensor_specs(self, shape):
        return {"_data": (shape, "uint8"), "_scale_inv": ((1,), "float32")}


class _NotTraceable:
    def inner_tensor_specs(self, shape):
        raise NotImplementedError("delayed scaling keeps state")


class _PredictsNothing:
    pass


def test_predicted_shapes_are_the_quantizers_own():
    assert predicted_shapes(_Predicting(), (2, 16)) == {"_data": (2, 16), "_scale_inv": (1,)}


@pytest.mark.parametrize(
    ("quantizer", "reason"),
    [(_NotTraceable(), "has no tracing contract: delayed"), (_PredictsNothing(), "no inner_tensor_specs")],
)
def test_a_quantizer_without_a_tracing_contract_is_unsupported(quantizer, reason):
    with pytest.raises(Unsupported, match=reason):
        predicted_shapes(quantizer, (2, 16))
