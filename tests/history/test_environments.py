"""asv's environment is part of a case's identity (django's history: six Python environments on one
machine); an `existing` environment, TE runners' own, is not, and their cases keep their fingerprints."""

from __future__ import annotations

import json
from collections import Counter

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from tests.history.django_data import django_results
from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.discover import find_runs
from tewatch.ingest.fingerprints import digest_of, machine_case_fingerprint
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine.database import make_engine
from tewatch.store.reads import queries
from tewatch.store.schema.models import Benchmark, Case, Result, Run, Series


def test_each_asv_environment_has_its_own_series(tmp_path, db_url):
    results = django_results(tmp_path, files=120)
    runs = find_runs(results)
    environments = Counter(json.loads(r.result.read_text())["env_name"] for r in runs)
    assert len(environments) >= 3
    engine = make_engine(db_url)
    for run in runs:
        ingest_bundle(engine, bundle_of(run, branch="main"))
    with Session(engine) as session:
        assert set(session.scalars(select(Case.environment).distinct())) == set(environments)
        # one benchmark: a series per environment, holding that environment's runs only
        name = "form_benchmarks.form_clean.benchmark.FormClean.time_form_clean"
        rows = session.execute(
            select(Case.environment, Run.asv_env_name, func.count())
            .select_from(Result)
            .join(Series, Series.id == Result.series_id)
            .join(Case, Case.id == Series.case_id)
            .join(Benchmark, Benchmark.id == Series.benchmark_id)
            .join(Run, Run.id == Result.run_id)
            .where(Benchmark.name == name)
            .group_by(Case.environment, Run.asv_env_name)
        ).all()
    with engine.connect() as conn:  # the API's cases say which environment they are
        assert {r["environment"] for r in queries.latest_verdicts(conn)} == set(environments)
    engine.dispose()
    assert {case_env for case_env, run_env, _ in rows if case_env == run_env} == set(environments)
    assert all(case_env == run_env for case_env, run_env, _ in rows)
    assert {env: n for env, _, n in rows} == dict(environments)


def test_cases_of_an_existing_environment_keep_their_machine_group(db_url):
    """The group key (the fingerprint before machines took part) leaves an `existing` environment out."""
    engine = make_engine(db_url)
    ingest_bundle(engine, bundle_of(tiny_run(0), branch="main"))
    with Session(engine) as session:
        cases = session.scalars(select(Case)).all()
    engine.dispose()
    assert cases and {c.environment for c in cases} == {""}
    for case in cases:
        assert case.fingerprint == machine_case_fingerprint(case.group_key, "tiny-cpu")
        assert case.group_key == digest_of(
            {
                "case": case.case_name,
                "params": case.params,
                "gpu_model": case.gpu_model,
                "compute_capability": case.compute_capability,
            }
        )
