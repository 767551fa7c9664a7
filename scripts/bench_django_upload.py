"""Bulk upload of a whole real asv history: django/django-asv's ubuntu-latest results (4,339 files, see
../shared/data/ext-django-asv/SOURCE.md) through `tewatch upload --branch main` into a real `tewatch serve`
with default settings, detection included. Prints the wall time, the series, change points and alerts.

    .venv/bin/python scripts/bench_django_upload.py [--files 300] [--db postgresql://...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tewatch.campaign.service_process import ServiceProcess
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import upgrade
from tewatch.store.schema.alert_models import Alert, AlertStatus, AlertStatusChange, Detection
from tewatch.store.schema.models import Result, Run, Series, TokenScope
from tewatch.store.writes.tokens import create_token

DATA = Path(__file__).resolve().parents[1].parent / "shared/data/ext-django-asv/django-ubuntu-latest.tar.xz"


def results_dir(archive: Path, into: Path, files: int | None) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    results = into / "results"
    if files is not None:
        machine = results / "ubuntu-latest"
        for extra in sorted(p for p in machine.glob("*.json") if p.name != "machine.json")[files:]:
            extra.unlink()
    return results


def counts(database_url: str) -> dict[str, int]:
    engine = make_engine(database_url)
    with Session(engine) as session:
        scalar = session.scalar
        opened = scalar(
            select(func.count()).select_from(AlertStatusChange).where(AlertStatusChange.to_status == "open")
        )
        found = {
            "runs": scalar(select(func.count()).select_from(Run)),
            "results": scalar(select(func.count()).select_from(Result)),
            "series": scalar(select(func.count()).select_from(Series)),
            "change points (active)": scalar(
                select(func.count()).select_from(Detection).where(Detection.active)
            ),
            "change points withdrawn": scalar(
                select(func.count()).select_from(Detection).where(~Detection.active)
            ),
            "alerts opened": opened,
            "alerts resolved": scalar(
                select(func.count())
                .select_from(AlertStatusChange)
                .where(AlertStatusChange.to_status == "resolved")
            ),
            "alerts open now": scalar(
                select(func.count()).select_from(Alert).where(Alert.status == AlertStatus.open)
            ),
        }
        for kind, n in session.execute(select(Alert.kind, func.count()).group_by(Alert.kind)):
            found[f"  {kind.value} alerts"] = n
    engine.dispose()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA, help="the django-ubuntu-latest.tar.xz archive")
    parser.add_argument("--files", type=int, default=None, help="upload only the first N results files")
    parser.add_argument("--db", default=None, help="database URL (default: a fresh SQLite file)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the work folder (store, logs) here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tewatch-django-"))
    try:
        results = results_dir(args.data, work, args.files)
        database_url = args.db or f"sqlite:///{work / 'tewatch.sqlite3'}"
        upgrade(database_url)
        engine = make_engine(database_url)
        token = create_token(engine, "bench", TokenScope.upload)
        engine.dispose()
        files = sum(1 for p in (results / "ubuntu-latest").glob("*.json") if p.name != "machine.json")
        with ServiceProcess(database_url, work / "service.log") as service:
            start = time.perf_counter()
            with (work / "upload.log").open("wb") as log:
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "tewatch",
                        "upload",
                        str(results),
                        "--url",
                        service.url,
                        "--token",
                        token,
                        "--branch",
                        "main",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            wall = time.perf_counter() - start
        tail = (work / "upload.log").read_text().splitlines()[-3:]
        print(f"upload of {files} results files: {wall:.1f} s wall (exit {done.returncode})")
        for line in tail:
            print(f"  {line}")
        for label, value in counts(database_url).items():
            print(f"{label:28s} {value:>8,}")
    finally:
        if args.keep:
            shutil.copytree(work, args.keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
