"""A small store written through the models: one GEMM series on `main` with a step, a verdict that
turns into an error, a driver upgrade, and a pull request run against the newest main commit; and the
pieces other tests build their stores from (an H200, TE's environment, the GEMM case, a run with a value of
each of its series)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from tewatch.store.schema.models import (
    Benchmark,
    Case,
    Commit,
    Environment,
    Machine,
    Result,
    ResultStatus,
    Run,
    Series,
    Verdict,
    VerdictStatus,
)

START = datetime(2026, 11, 1, tzinfo=UTC)


def h200(**fields: Any) -> Machine:
    return Machine(
        **{
            "digest": "m",
            "name": "h200",
            "gpu_model": "NVIDIA H200",
            "compute_capability": "9.0",
            "driver": "580.1",
            "cuda": "13.0",
            **fields,
        }
    )


def te_environment() -> Environment:
    return Environment(digest="env", torch="2.11.0", te_version="2.20.2")


def gemm_case(**fields: Any) -> Case:
    return Case(
        **{
            "fingerprint": "case-gemm",
            "case_name": "gemm.Gemm",
            "params": {"recipe": "nvfp4"},
            "gpu_model": "NVIDIA H200",
            "compute_capability": "9.0",
            **fields,
        }
    )


def main_commit(session: Session, sha: str, hour: int) -> Commit:
    """The commit `sha` on `main`, as stored or new, dated `hour` hours after START."""
    stored = session.scalar(select(Commit).where(Commit.sha == sha))
    return stored or Commit(sha=sha, branch="main", committed_at=START + timedelta(hours=hour))


def add_run(
    session: Session,
    machine: Machine,
    environment: Environment,
    commit: Commit,
    hour: int,
    values: Mapping[int, float],
    **run: Any,
) -> Run:
    """A run of `commit` on its branch, started `hour` hours after START, with an ok value of each series
    id in `values`."""
    stored = Run(
        machine=machine,
        environment=environment,
        commit=commit,
        branch=commit.branch,
        started_at=START + timedelta(hours=hour),
        **run,
    )
    session.add(stored)
    session.flush()
    session.add_all(
        Result(run_id=stored.id, series_id=series_id, status=ResultStatus.ok, value=value)
        for series_id, value in values.items()
    )
    return stored


class StoreHistory:
    def __init__(self, session: Session):
        self.session = session
        self.rng = np.random.default_rng(5)
        self.machines = {driver: h200(digest=f"m-{driver}", driver=driver) for driver in ("580.1", "590.2")}
        self.environment = te_environment()
        self.benchmark = Benchmark(name="gemm.Gemm.time", case_name="gemm.Gemm", unit="seconds")
        self.case = gemm_case()
        self.series = Series(fingerprint="series-gemm", case=self.case, benchmark=self.benchmark)
        session.add_all([*self.machines.values(), self.environment, self.series])
        self.runs: list[Run] = []
        self.commits: dict[str, Commit] = {}

    def add_run(
        self,
        sha: str,
        level: float,
        status: VerdictStatus,
        driver: str = "580.1",
        pr_number: int | None = None,
        merge_base: str | None = None,
        at: int | None = None,
    ) -> Run:
        index = len(self.runs) if at is None else at
        commit = self.commits.setdefault(
            sha,
            Commit(
                sha=sha,
                branch="main" if pr_number is None else "feature",
                pr_number=pr_number,
                committed_at=START + timedelta(hours=index),
            ),
        )
        run = add_run(
            self.session,
            self.machines[driver],
            self.environment,
            commit,
            index,
            {},
            digest=f"run-{sha}-{pr_number}-{driver}",
            pr_number=pr_number,
            merge_base_sha=merge_base,
        )
        samples = (level * np.exp(self.rng.normal(0, 0.01, 30))).tolist()
        self.session.add_all(
            [
                Result(
                    run_id=run.id,
                    series_id=self.series.id,
                    status=ResultStatus.ok,
                    value=float(np.median(samples)),
                    samples=samples,
                ),
                Verdict(
                    run_id=run.id,
                    case_id=self.case.id,
                    status=status,
                    check="compiled_vs_eager",
                    exception_class="RuntimeError" if status != VerdictStatus.passed else None,
                    message="shape '[2, 2, 1024]' is invalid" if status != VerdictStatus.passed else None,
                ),
            ]
        )
        self.session.flush()
        self.runs.append(run)
        return run

    @classmethod
    def reopen(cls, session: Session) -> StoreHistory:
        """The history already stored, to add runs to it in a later transaction."""
        history = cls.__new__(cls)
        history.session = session
        history.rng = np.random.default_rng(6)
        history.machines = {m.driver: m for m in session.scalars(select(Machine))}
        history.environment = session.scalar(select(Environment).where(Environment.digest == "env"))
        history.series = session.scalar(select(Series).where(Series.fingerprint == "series-gemm"))
        history.benchmark, history.case = history.series.benchmark, history.series.case
        history.runs = list(session.scalars(select(Run).order_by(Run.id)))
        history.commits = {r.commit.sha: r.commit for r in history.runs}
        return history
