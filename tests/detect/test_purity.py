"""tewatch.detect is statistics only: importing all of it loads no database, store, alerts or API code."""

import subprocess
import sys

CHECK = """
import pkgutil, importlib, sys
import tewatch.detect as detect
for module in pkgutil.iter_modules(detect.__path__):
    importlib.import_module(f"tewatch.detect.{module.name}")
print(sorted(m for m in sys.modules if m.split(".")[0] in ("sqlalchemy", "fastapi", "httpx")
             or m.startswith(("tewatch.store", "tewatch.alerts", "tewatch.api", "tewatch.pipeline"))))
"""


def test_the_detectors_import_no_store_and_no_alerts() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
