"""Revision 0012 on a store written before machines took part in a case's identity: a case of one machine
keeps its fingerprint and series; a case of two machines is split, each machine's history in series of its
own, and later uploads of either machine land in them."""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

from sqlalchemy import text

from tests.conftest import ASV_V1
from tests.uploads import bundle_of, tiny_run
from tewatch.ingest.discover import find_runs
from tewatch.ingest.fingerprints import digest_of, machine_case_fingerprint
from tewatch.ingest.service import ingest_bundle
from tewatch.store.engine.database import make_engine
from tewatch.store.engine.migrate import downgrade, upgrade

BEFORE = "0011_release_comparisons"
POINTS = """
SELECT c.group_key, c.machine, b.name, x.run_id, x.status, x.value, m.name
FROM results x JOIN series s ON s.id = x.series_id JOIN cases c ON c.id = s.case_id
JOIN benchmarks b ON b.id = s.benchmark_id JOIN runs r ON r.id = x.run_id JOIN machines m ON m.id = r.machine_id
"""


def _as_before_machines(engine, url: str) -> None:
    """The store as ingest wrote it before revision 0012: one case per machine group, its fingerprint the
    group key, every machine's results in its series and every machine's verdicts on it."""
    with engine.connect() as conn:
        cases = conn.execute(text("SELECT id, group_key FROM cases ORDER BY id")).all()
    downgrade(url, BEFORE)
    groups: dict[str, list[int]] = defaultdict(list)
    for case_id, group_key in cases:
        groups[group_key].append(case_id)
    with engine.begin() as conn:
        conn.execute(text("UPDATE cases SET group_key = '', machine = ''"))  # as if the columns were new
        for group_key, (keep, *others) in groups.items():
            conn.execute(
                text("UPDATE cases SET fingerprint = :fp WHERE id = :id"), {"fp": group_key, "id": keep}
            )
            for other in others:
                for series_id, benchmark_id in conn.execute(
                    text("SELECT id, benchmark_id FROM series WHERE case_id = :id"), {"id": other}
                ).all():
                    target = conn.execute(
                        text("SELECT id FROM series WHERE case_id = :keep AND benchmark_id = :b"),
                        {"keep": keep, "b": benchmark_id},
                    ).scalar()
                    if target is None:
                        conn.execute(
                            text("UPDATE series SET case_id = :keep WHERE id = :s"),
                            {"keep": keep, "s": series_id},
                        )
                        continue
                    conn.execute(
                        text("UPDATE results SET series_id = :t WHERE series_id = :s"),
                        {"t": target, "s": series_id},
                    )
                    conn.execute(text("DELETE FROM series WHERE id = :s"), {"s": series_id})
                conn.execute(
                    text("UPDATE verdicts SET case_id = :keep WHERE case_id = :o"), {"keep": keep, "o": other}
                )
                for table in ("latest_verdicts", "latest_branch_verdicts"):
                    conn.execute(text(f"DELETE FROM {table} WHERE case_id = :o"), {"o": other})
                conn.execute(text("DELETE FROM cases WHERE id = :o"), {"o": other})
        rows = conn.execute(
            text("SELECT s.id, b.name, c.fingerprint FROM series s JOIN benchmarks b ON b.id = s.benchmark_id "
                 "JOIN cases c ON c.id = s.case_id")
        ).all()  # fmt: skip
        for series_id, benchmark, case_fingerprint in rows:
            fingerprint = digest_of({"benchmark": benchmark, "case": case_fingerprint})
            conn.execute(
                text("UPDATE series SET fingerprint = :fp WHERE id = :s"), {"fp": fingerprint, "s": series_id}
            )


def test_one_machine_keeps_its_fingerprints_and_two_machines_are_split(db_url):
    engine = make_engine(db_url)
    try:
        ingest_bundle(engine, bundle_of(tiny_run(0), branch="main"))
        for run in sorted(find_runs(ASV_V1), key=lambda r: (r.result.name, r.result.parent.name)):
            ingest_bundle(engine, bundle_of(run, branch="main"))
        with engine.connect() as conn:
            expected = Counter(conn.execute(text(POINTS)).all())
        _as_before_machines(engine, db_url)
        with engine.connect() as conn:
            old_cases = dict(conn.execute(text("SELECT fingerprint, id FROM cases")).all())
            old_series = dict(conn.execute(text("SELECT fingerprint, id FROM series")).all())
            merged = conn.execute(
                text("SELECT s.case_id, COUNT(DISTINCT r.machine_id) FROM results x JOIN series s ON s.id = x.series_id "
                     "JOIN runs r ON r.id = x.run_id GROUP BY s.case_id HAVING COUNT(DISTINCT r.machine_id) > 1")
            ).all()  # fmt: skip
        assert merged, "before 0012, the two laptops' results share cases"

        upgrade(db_url)

        with engine.connect() as conn:
            cases = conn.execute(text("SELECT id, fingerprint, group_key, machine FROM cases")).all()
            series = dict(conn.execute(text("SELECT fingerprint, id FROM series")).all())
            points = Counter(conn.execute(text(POINTS)).all())
            latest = conn.execute(
                text("SELECT c.machine, m.name FROM latest_verdicts l JOIN cases c ON c.id = l.case_id "
                     "JOIN runs r ON r.id = l.run_id JOIN machines m ON m.id = r.machine_id")
            ).all()  # fmt: skip
        # every stored fingerprint is still there, naming the same case and series
        by_fingerprint = {fp: case_id for case_id, fp, _, _ in cases}
        assert all(by_fingerprint[fp] == case_id for fp, case_id in old_cases.items())
        assert all(series[fp] == series_id for fp, series_id in old_series.items())
        # each machine's history in its own series, none lost
        assert points == expected
        assert all(case_machine == run_machine for _, case_machine, _, _, _, _, run_machine in points)
        machines_of = defaultdict(set)
        for _, fingerprint, group_key, machine in cases:
            machines_of[group_key].add(machine)
            if fingerprint not in old_cases:  # split off: the fingerprint a case of that machine gets now
                assert fingerprint == machine_case_fingerprint(group_key, machine)
        assert {frozenset(m) for m in machines_of.values()} == {
            frozenset({"tiny-cpu"}),
            frozenset({"laptop-a", "laptop-b"}),
        }
        assert latest and all(case_machine == run_machine for case_machine, run_machine in latest)

        # a later upload of either laptop lands in its own cases
        for run in find_runs(ASV_V1):
            bundle = bundle_of(run, branch="main")
            later = bundle.result.replace(b'"commit_hash": "', b'"commit_hash": "f', 1)
            ingest_bundle(engine, dataclasses.replace(bundle, result=later))
        with engine.connect() as conn:
            assert conn.execute(text("SELECT COUNT(*) FROM cases")).scalar_one() == len(cases)
            later = conn.execute(text(POINTS)).all()
        assert len(later) > len(points.keys()) and all(row[1] == row[6] for row in later)
    finally:
        engine.dispose()
