"""The API serves what its OpenAPI document promises: schemathesis generates requests for every operation
from /openapi.json against a real `tewatch serve` (SQLite and PostgreSQL) holding a real history, and
checks every answer against the document (status codes, content types, bodies, headers) and that none is
a 5xx. Every operation is tried; the failures of all of them are reported together. Then sequences of
calls follow the document's links from one answer to the next operation."""

from __future__ import annotations

from collections import Counter

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.uploads import post_tiny_history
from tewatch.api.openapi_doc import LINKS

pytestmark = pytest.mark.long_running

EXAMPLES = 25  # per operation and database
# Bodies whose validity no JSON Schema can say are exempt from "a schema-valid request is accepted": an
# upload's parts are asv's files, which the document can only call binary, and a webhook URL must parse
# as one httpx can send to (a host, a port up to 65535, IDNA), and a commit graph lists every commit once
# and after its parents, and a bisection's evidence holds only what a JSON column keeps (no integer past 64
# bits, no lone surrogate). Their refusals are 4xx naming what is wrong, which tests/e2e, tests/alerts
# and tests/history check.
EXCLUDED = {
    "POST /api/v1/runs": [positive_data_acceptance],
    "POST /api/v1/webhooks": [positive_data_acceptance],
    "POST /api/v1/commits/graph": [positive_data_acceptance],
    "POST /api/v1/bisections": [positive_data_acceptance],
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
        post_tiny_history(client, "main")
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


STATEFUL_SCENARIOS = 100  # per database: sequences of up to STATEFUL_STEPS calls
STATEFUL_STEPS = 6
STATEFUL = settings(
    max_examples=STATEFUL_SCENARIOS,
    stateful_step_count=STATEFUL_STEPS,
    deadline=None,
    database=None,
    derandomize=True,  # the same sequences every run: the links followed below are always followed
    suppress_health_check=list(HealthCheck),
)


def test_linked_operations_answer_as_documented(history):
    """Sequences of calls along the document's links (and those schemathesis infers): a run listed or
    uploaded to its results, a result to its series, an alert to its status change and back, each
    answer checked against the document like every single call above, and against its neighbours
    (a resource just created is there, one just deleted is gone)."""
    schema = schemathesis.openapi.from_url(f"{history.url}/openapi.json")
    # valid calls only, as above: a negative case's missing Authorization would be sent with the token
    schema.config.generation.update(modes=[GenerationMode.POSITIVE])
    headers = {"Authorization": f"Bearer {history.token}"}
    followed: Counter[str] = Counter()

    class Linked(schema.as_state_machine()):
        def step(self, input):
            if input.transition is not None and input.is_applied:
                followed[input.transition.id] += 1
            return super().step(input)

        def get_call_kwargs(self, case):
            return {"headers": headers, "timeout": 60}

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            excluded = list(EXCLUDED.get(case.operation.label, []))
            if None in (case.path_parameters or {}).values():
                # a link inferred from a field that may be null (a bisection started from no alert): the
                # call it makes names no resource, and refusing it is right
                excluded.append(positive_data_acceptance)
            case.validate_response(
                response,
                additional_checks=additional_checks,
                excluded_checks=excluded,
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    Linked.run(settings=STATEFUL)
    documented = {name for links in LINKS.values() for name in links}
    assert sum(followed.values()) >= 10, followed
    assert any(link.rsplit("] ", 1)[-1].split(" ->")[0] in documented for link in followed), followed
