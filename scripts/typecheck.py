"""Type-check the repository with mypy, configured in pyproject.toml: `python scripts/typecheck.py`.

tewatch is installed from service/ and dashboards/ (setuptools' package-dir), and no search path mypy
knows maps those folders to the names `tewatch` and `tewatch.dashboards`. This hands mypy each of their
files under the module name it is installed as, and benchmarks/ and scripts/ as they are, so imports of
tewatch resolve to the checked sources and errors name the files in this checkout. Extra arguments go to
mypy (`--no-incremental`, `--show-traceback`). Exit status: 0 clean, 1 errors, 2 usage or crash.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parent.parent
# pyproject's [tool.setuptools] package-dir
PACKAGE_DIRS = {"tewatch": "service", "tewatch.dashboards": "dashboards"}
# Alembic's revision files are loaded by path, not imported as modules
NOT_MODULES = ("service/store/migrations/versions",)
CHECKED_AS_THEY_ARE = ["benchmarks", "scripts"]


def installed_sources() -> list[BuildSource]:
    sources = []
    for package, folder in PACKAGE_DIRS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative.as_posix().startswith(NOT_MODULES):
                continue
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            sources.append(BuildSource(str(relative), ".".join((package, *parts)), None))
    return sources


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def main(argv: list[str]) -> int:
    sources, options = process_options([*argv, *CHECKED_AS_THEY_ARE])
    try:
        result = build.build(sources + installed_sources(), options, stdout=sys.stdout, stderr=sys.stderr)
    except CompileError as error:
        print("\n".join(error.messages), file=sys.stderr)
        return 2
    for message in result.errors:
        print(message)
    errors = [m for m in result.errors if ": error:" in m]
    files = {m.split(":", 1)[0] for m in errors}
    checked = len(sources) + len(installed_sources())
    if errors:
        print(
            f"Found {_count(len(errors), 'error')} in {_count(len(files), 'file')} (checked {checked} source files)"
        )
        return 1
    print(f"Success: no issues found in {checked} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
