"""insert_rows (binary COPY, executemany) stores exactly what a SQLAlchemy Core insert stores."""

from __future__ import annotations

from sqlalchemy import select

from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.plan import build_plan
from tewatch.ingest.service import ingest_bundle
from tewatch.ingest.writer import RESULT_COLUMNS, VERDICT_COLUMNS
from tewatch.store.engine.database import make_engine, write_connection
from tewatch.store.schema.models import Case, Result, Series, Verdict


def _stored(conn, table, columns, run_id) -> list[tuple]:
    """Rows as the database keeps them: JSON as text, no type processing on the way out."""
    key = "series_id" if "series_id" in columns else "case_id"
    rendered = ", ".join(f'CAST("{c}" AS TEXT)' for c in columns)
    return [
        tuple(row)
        for row in conn.exec_driver_sql(
            f"SELECT {rendered} FROM {table.name} WHERE run_id = {int(run_id)} ORDER BY {key}"
        )
    ]


def test_bulk_rows_equal_core_insert_rows(db_url):
    engine = make_engine(db_url)
    bundle = bundle_of(tiny_run(0), branch="main")
    try:
        run_id = ingest_bundle(engine, bundle).run_id
        plan = build_plan(bundle)
        with engine.connect() as conn:
            bulk_results = _stored(conn, Result.__table__, RESULT_COLUMNS, run_id)
            bulk_verdicts = _stored(conn, Verdict.__table__, VERDICT_COLUMNS, run_id)
            series_ids = dict(conn.execute(select(Series.fingerprint, Series.id)).all())
            case_ids = dict(conn.execute(select(Case.fingerprint, Case.id)).all())
        assert len(bulk_results) == len(plan.results) == 14 and len(bulk_verdicts) == 8
        assert any(r[RESULT_COLUMNS.index("samples")] == "null" for r in bulk_results)  # metric rows

        results = [
            dict(zip(RESULT_COLUMNS, (run_id, series_ids[r.series_fingerprint], *r[1:]), strict=True))
            for r in plan.results
        ]
        verdicts = [
            dict(zip(VERDICT_COLUMNS, (run_id, case_ids[v.case_fingerprint], *v[1:]), strict=True))
            for v in plan.verdicts
        ]
        with write_connection(engine) as conn:
            conn.execute(Result.__table__.delete().where(Result.run_id == run_id))
            conn.execute(Verdict.__table__.delete().where(Verdict.run_id == run_id))
            conn.execute(Result.__table__.insert(), results)
            conn.execute(Verdict.__table__.insert(), verdicts)
        with engine.connect() as conn:
            assert _stored(conn, Result.__table__, RESULT_COLUMNS, run_id) == bulk_results
            assert _stored(conn, Verdict.__table__, VERDICT_COLUMNS, run_id) == bulk_verdicts
    finally:
        engine.dispose()


def test_an_upload_writes_its_rows_in_series_and_case_order(db_url):
    engine = make_engine(db_url)
    try:
        run_id = ingest_bundle(engine, bundle_of(tiny_run(0), branch="main")).run_id
        with engine.connect() as conn:
            for table, key in ((Result.__table__, "series_id"), (Verdict.__table__, "case_id")):
                keys = [
                    row[0]
                    for row in conn.exec_driver_sql(
                        f"SELECT {key} FROM {table.name} WHERE run_id = {int(run_id)} ORDER BY id"
                    )
                ]
                assert len(keys) > 1 and keys == sorted(keys)
    finally:
        engine.dispose()
