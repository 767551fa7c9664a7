"""Rebuild the UploadBundle of every stored run from its raw files."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import Engine, select

from tewatch.ingest.bundle import UploadBundle
from tewatch.store.schema import case_archive
from tewatch.store.schema.models import Commit, RawFile, Run, RunFile


def stored_bundles(engine: Engine) -> Iterator[tuple[int, UploadBundle]]:
    with engine.connect() as conn:
        runs = conn.execute(
            select(Run.id, Run.branch, Run.pr_number, Run.merge_base_sha, Commit.repo)
            .join(Commit, Commit.id == Run.commit_id)
            .order_by(Run.id)
        ).all()
        for run in runs:
            files = conn.execute(
                select(RunFile.role, RawFile.content)
                .join(RawFile, RawFile.digest == RunFile.digest)
                .where(RunFile.run_id == run.id)
            ).all()
            by_role = {role: bytes(content) for role, content in files}
            archive = by_role.get(case_archive.ROLE)
            yield (
                run.id,
                UploadBundle(
                    result=by_role["result"],
                    machine=by_role["machine"],
                    benchmarks=by_role["benchmarks"],
                    run=by_role.get("run"),
                    asv_stderr=by_role.get("asv_stderr"),
                    cases=case_archive.unpack(archive) if archive is not None else [],
                    repo=run.repo,
                    branch=run.branch,
                    pr_number=run.pr_number,
                    merge_base_sha=run.merge_base_sha,
                ),
            )
