"""TE's import skips JAX (as TE does when `import jax` fails) and leaves `import jax` working after."""

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.harness import te_import


@pytest.fixture
def fake_packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A `jax` that records being imported and a `transformer_engine` shaped like TE's top level; both
    leave sys.modules afterwards (a fake `jax` left there misleads scipy's array-API checks)."""
    (tmp_path / "jax").mkdir()
    (tmp_path / "jax" / "__init__.py").write_text("IMPORTED = True\n")
    pkg = tmp_path / "transformer_engine"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        from . import pytorch
        try:
            import jax
            HAS_JAX = True
        except ImportError:
            HAS_JAX = False
    """)
    )
    (pkg / "pytorch.py").write_text("NAME = 'te.pytorch'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ("jax", "transformer_engine", "transformer_engine.pytorch")
    for name in names:
        monkeypatch.delitem(sys.modules, name, raising=False)
    yield tmp_path
    for name in names:
        sys.modules.pop(name, None)


def test_jax_is_skipped_during_te_import_and_importable_afterwards(fake_packages: Path) -> None:
    te = te_import.import_transformer_engine()
    assert te.NAME == "te.pytorch"
    assert sys.modules["transformer_engine"].HAS_JAX is False
    assert "jax" not in sys.modules
    import jax

    assert jax.IMPORTED


def test_opting_out_keeps_tes_jax_import(fake_packages: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(te_import.KEEP_JAX_ENV, "1")
    te_import.import_transformer_engine()
    assert sys.modules["transformer_engine"].HAS_JAX is True
