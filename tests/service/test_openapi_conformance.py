"""The API serves what its OpenAPI document promises: schemathesis generates requests for every operation
from /openapi.json against a real `tewatch serve` (SQLite and PostgreSQL) holding a real history, and
checks every answer against the document (status codes, content types, bodies, headers) and that none is
a 5xx. Every operation is tried; the failures of all of them are reported together."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.service.uploads import parts_of, post_run, tiny_run

EXAMPLES = 25  # per operation and database
# Bodies whose validity no JSON Schema can say are exempt from "a schema-valid request is accepted": an
# upload's parts are asv's files, which the document can only call binary, and a webhook URL must parse
# as one httpx can send to (a host, a port up to 65535, IDNA), and a commit graph lists every commit once
# and after its parents. Their refusals are 4xx naming what is wrong, which tests/service, tests/alerts
# and tests/history check.
EXCLUDED = {
    "POST /api/v1/runs": [positive_data_acceptance],
    "POST /api/v1/webhooks": [positive_data_acceptance],
    "POST /api/v1/commits/graph": [positive_data_acceptance],
}
CONFORMANCE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def history(live_server):
    """Two runs on main and a pull request against the first, with their alerts."""
    with live_server.client() as client:
        for index, fields in [(0, {}), (1, {}), (1, {"pr_number": "7", "merge_base_sha": "47692de1"})]:
            answer = post_run(client, parts_of(tiny_run(index)), branch="main", **fields)
            assert answer.status_code in (200, 201), answer.text
    return live_server


def test_every_time_served_carries_its_zone(history):
    with history.client() as client:
        runs = client.get("/api/v1/runs").json()["items"]
        alerts = client.get("/api/v1/alerts").json()
    times = [run[k] for run in runs for k in ("started_at", "uploaded_at", "committed_at") if run.get(k)]
    times += [alert[k] for alert in alerts for k in ("created_at", "updated_at")]
    assert len(times) > 10
    assert all(t.endswith("Z") or t[-6] in "+-" for t in times), times


def conformance_failure(operation, headers: dict[str, str]) -> str | None:
    """The first failure schemathesis finds on this operation, in its words, or None."""

    @CONFORMANCE
    @given(case=operation.as_strategy())
    def conforms(case) -> None:
        case.call_and_validate(headers=headers, timeout=60, excluded_checks=EXCLUDED.get(operation.label))

    try:
        conforms()
    except (Exception, BaseExceptionGroup) as exc:
        return str(exc)[:3000]
    return None


def test_every_operation_answers_as_documented(history):
    schema = schemathesis.openapi.from_url(f"{history.url}/openapi.json")
    headers = {"Authorization": f"Bearer {history.token}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    failures = {op.label: failure for op in operations if (failure := conformance_failure(op, headers))}
    assert len(operations) > 20
    assert not failures, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())
