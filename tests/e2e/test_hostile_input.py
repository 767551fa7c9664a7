"""Hostile input, property-based: no request answers 5xx, and a refused upload stores nothing.

Hypothesis puts hostile values (tests/e2e/hostile.py: huge integers, non-finite numbers, dates out of
range, deep nesting, lone surrogates, NULs, text longer than its column) at sites all over a valid upload
and at every leaf of every JSON request body, and hostile integers and text in every query and path
parameter of the API and the dashboard, against a real `tewatch serve` on SQLite and on PostgreSQL (like
test_bad_input.py). Every refusal must be a 4xx
that names the file or field, with every table's row count unchanged; whatever is accepted must leave
every page readable. How many inputs of each kind were tried, per database, goes to
test-output/hostile-input-counts.json and the end of the pytest summary.
"""

from __future__ import annotations

import json
import urllib.parse
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from tests.conftest import REPO_ROOT
from tests.e2e import hostile
from tests.e2e.hostile import SENTINEL, Site
from tests.uploads import parts_of, post_run, post_tiny_history, tiny_run
from tewatch.store.engine.database import make_engine, write_connection
from tewatch.store.reads.queries import store_counts

EXAMPLES = 50  # per kind and database: the file takes about 35 s on two busy cores, both databases
HOSTILE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TRIED: Counter[tuple[str, str]] = Counter()  # (kind, database) -> inputs tried
FIVE_XX: Counter[tuple[str, str]] = Counter()  # of them, answered 5xx (each also fails its test)
COUNTS_FILE = REPO_ROOT / "test-output" / "hostile-input-counts.json"


def backend_of(server) -> str:
    return server.db_url.split(":", 1)[0].split("+", 1)[0]


@pytest.fixture(scope="module")
def store(live_server):
    """The live server with a real history (two runs and a pull request) and one engine to count rows."""
    with live_server.client() as client:
        post_tiny_history(client, "hostile")
    engine = make_engine(live_server.db_url)
    yield live_server, engine
    engine.dispose()


def row_counts(engine) -> dict[str, int]:
    """Rows of every table ingest writes (detection, running after accepted uploads, writes none)."""
    with engine.connect() as conn:
        counts = store_counts(conn)
        for table in ("raw_files", "run_files", "environments", "latest_verdicts", "latest_branch_verdicts"):
            counts[table] = conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
    return counts


def hostile_parts(site: Site, value: str) -> dict[str, list[tuple[str, bytes]]]:
    """A valid upload of the tiny fixture with `value` (raw JSON text) at `site`."""
    parts = parts_of(tiny_run(0))
    for part in ("result", "benchmarks") if site.part == "both" else (site.part,):
        index = site.index if part == "cases" else 0
        name, content = parts[part][index]
        data = json.loads(content)
        site.edit(data)
        hostile_text = json.dumps(data).replace(json.dumps(SENTINEL), value)
        parts[part][index] = (name, hostile_text.encode("utf-8", "surrogatepass"))
    return parts


def upload_and_check(store, kind: str, parts, fields: dict[str, str]) -> None:
    """The upload answers below 500; a refusal says where and stores nothing."""
    server, engine = store
    TRIED[(kind, backend_of(server))] += 1
    before = row_counts(engine)
    with server.client() as client:
        answer = post_run(client, parts, **{"branch": "hostile", **fields})
    FIVE_XX[(kind, backend_of(server))] += answer.status_code >= 500
    assert answer.status_code < 500, answer.text
    if answer.status_code >= 400:
        body = answer.json()
        assert isinstance(body["detail"], str) and ("file" in body or "field" in body), body
        assert row_counts(engine) == before, answer.text


def _json_kind(kind: str, sites: list[Site], values: st.SearchStrategy[str]):
    @HOSTILE
    @given(site=st.sampled_from(sites), value=values)
    def test(store, site, value):
        upload_and_check(store, kind, hostile_parts(site, value), {})

    test.__doc__ = f"{kind}: at {len(sites)} sites of the upload's files"
    return test


test_huge_integers = _json_kind("huge_int", hostile.NUMBER_SITES, hostile.huge_ints())
test_non_finite_numbers = _json_kind("non_finite", hostile.NUMBER_SITES, hostile.non_finite())
test_deep_nesting = _json_kind("deep_nesting", hostile.NESTING_SITES, hostile.deep())
test_lone_surrogates = _json_kind("surrogate", hostile.TEXT_SITES, hostile.surrogates())
test_long_text = _json_kind("long_text", hostile.TEXT_SITES, hostile.long_texts())


@HOSTILE
@given(
    site_value=st.one_of(
        st.tuples(st.sampled_from(hostile.MS_DATE_SITES), hostile.ms_dates()),
        st.tuples(st.sampled_from(hostile.ISO_DATE_SITES), hostile.iso_dates()),
        st.tuples(st.just(hostile.form_site("commit_date")), hostile.form_dates()),
    )
)
def test_dates_out_of_range(store, site_value):
    site, value = site_value
    if site.part == "form":
        upload_and_check(store, "bad_date", parts_of(tiny_run(0)), {site.form_field: value})
    else:
        upload_and_check(store, "bad_date", hostile_parts(site, value), {})


@HOSTILE
@given(
    site_value=st.one_of(
        st.tuples(st.sampled_from(hostile.TEXT_SITES), hostile.nuls()),
        st.tuples(st.sampled_from(hostile.TEXT_FORM_SITES), hostile.form_texts("nul")),
    )
)
def test_nul_characters(store, site_value):
    site, value = site_value
    if site.part == "form":
        upload_and_check(store, "nul", parts_of(tiny_run(0)), {site.form_field: value})
    else:
        upload_and_check(store, "nul", hostile_parts(site, value), {})


@HOSTILE
@given(site=st.sampled_from([hostile.form_site("pr_number"), *hostile.TEXT_FORM_SITES]), data=st.data())
def test_form_fields(store, site, data):
    """The multipart text fields: huge or malformed pull request numbers, long text."""
    value = data.draw(hostile.form_ints() if site.form_field == "pr_number" else hostile.form_texts("long"))
    upload_and_check(store, "form_field", parts_of(tiny_run(0)), {site.form_field: value})


# --------------------------------------------------------------------------------- query and path params
# The dashboard's routes are not in the OpenAPI schema: (path, parameter, where, type)
DASHBOARD_PARAMS = [
    ("/case/{case_id}", "case_id", "path", "integer"),
    ("/case/{case_id}", "branch", "query", "string"),
    ("/series/{series_id}", "series_id", "path", "integer"),
    ("/series/{series_id}", "pr", "query", "integer"),
    ("/series/{series_id}", "last", "query", "string"),
    ("/series/{series_id}", "branch", "query", "string"),
    ("/series/{series_id}", "scale", "query", "string"),
    ("/series/{series_id}/points.json", "series_id", "path", "integer"),
    ("/series/{series_id}/points.json", "scale", "query", "string"),
    ("/series/{series_id}/points.json", "pr", "query", "integer"),
    ("/series/{series_id}/points.json", "branch", "query", "string"),
    ("/series/{series_id}/plot.svg", "series_id", "path", "integer"),
    ("/series/{series_id}/plot.svg", "pr", "query", "integer"),
    ("/case/{case_id}", "run", "query", "integer"),
    ("/case/{case_id}/trajectory.svg", "case_id", "path", "integer"),
    ("/case/{case_id}/trajectory.svg", "run", "query", "integer"),
    ("/runs", "page", "query", "integer"),
    ("/runs", "gpu", "query", "string"),
    ("/runs/{run_id}", "run_id", "path", "integer"),
    ("/pr", "number", "query", "integer"),
    ("/pr/{number}", "number", "path", "integer"),
    ("/pr/{number}", "sort", "query", "string"),
    ("/matrix", "world_size", "query", "integer"),
    ("/matrix", "gpu", "query", "string"),
    ("/matrix", "view", "query", "string"),
    ("/", "q", "query", "string"),
    ("/", "page", "query", "integer"),
    ("/", "branch", "query", "string"),
    ("/alerts", "kind", "query", "string"),
    ("/releases", "branch", "query", "string"),
]
# what the other path parameters of a route hold while one parameter is hostile: rows that exist
EXISTING = {"run_id": "1", "series_id": "1", "case_id": "1", "alert_id": "1", "pr_number": "7", "number": "7",
            "subscription_id": "1", "delivery_id": "x", "bisection_id": "1"}  # fmt: skip


@pytest.fixture(scope="module")
def route_params(store):
    """(method, path, parameter, where, type) of every parameter of every route, API and dashboard."""
    server, _ = store
    with server.client() as client:
        paths = client.get("/openapi.json").json()["paths"]
    found = []
    for path, operations in paths.items():
        for method, operation in operations.items():
            for param in operation.get("parameters", []):
                schema = param["schema"]
                types = {s.get("type") for s in schema.get("anyOf", [schema])}
                kind = "integer" if "integer" in types else "string"
                found.append((method.upper(), path, param["name"], param["in"], kind))
    found += [("GET", path, name, where, kind) for path, name, where, kind in DASHBOARD_PARAMS]
    assert len(found) > 40, found
    return found


def hostile_integers() -> st.SearchStrategy[str]:
    return st.one_of(
        hostile.huge_ints().filter(lambda digits: len(digits) < 1000),
        st.integers(-(2**31) - 10, -(2**31)).map(str),
        st.sampled_from(
            ["2147483647", "2147483648", "9223372036854775807", "-1", "0", "²", "١٢", "1e3", "+7"]
        ),
    )


def hostile_texts() -> st.SearchStrategy[str]:
    """Already percent-encoded: NULs, bytes that are no UTF-8, a lone surrogate in CESU-8, long text."""
    return st.one_of(
        st.sampled_from(["%00", "a%00b", "%ED%A0%80", "%FF%FE", "%C0%80", "%25", "%", "x" * 5000]),
        st.text(max_size=30).map(lambda t: urllib.parse.quote(t.encode("utf-8", "surrogatepass"), safe="")),
    )


def request_and_check(store, kind: str, route: tuple, value: str) -> None:
    server, _ = store
    method, path, name, where, _ = route
    TRIED[(kind, backend_of(server))] += 1
    fill = {**EXISTING, **({name: value} if where == "path" else {})}
    url = path.format(**{key: fill.get(key, "1") for key in EXISTING if "{" + key + "}" in path})
    if where == "query":
        url += f"?{name}={value}"
    body = {"status": "acknowledged"} if path.endswith("/status") else None
    with server.client() as client:
        answer = client.request(method, url, json=body)
    FIVE_XX[(kind, backend_of(server))] += answer.status_code >= 500
    assert answer.status_code < 500, f"{method} {url[:200]}: {answer.status_code} {answer.text[:300]}"


@HOSTILE
@given(data=st.data())
def test_integer_parameters(store, route_params, data):
    route = data.draw(st.sampled_from([r for r in route_params if r[4] == "integer"]))
    request_and_check(store, "int_param", route, data.draw(hostile_integers()))


@HOSTILE
@given(data=st.data())
def test_text_parameters(store, route_params, data):
    route = data.draw(st.sampled_from(route_params))
    request_and_check(store, "text_param", route, data.draw(hostile_texts()))


# ------------------------------------------------------------------------------------------- JSON bodies
# A valid body of every operation that takes JSON; each of its leaves is a site for a hostile value.
JSON_BODIES = {
    "/api/v1/alerts/1/status": {"status": "acknowledged", "actor": "oncall", "note": "seen"},
    "/api/v1/webhooks": {"url": "https://bot.example/hook", "secret": "0123456789abcdef",
                         "event_types": ["pr.report", "correctness.failed"]},
    "/api/v1/detect": {"branch": "hostile", "runs": [1, 2]},
    "/api/v1/commits/graph": {"repo": "te", "commits": [["47692de1", 1700000000, []],
                                                        ["54083aa3", 1700000100, ["47692de1"]]]},
    "/api/v1/bisections": {"repo": "NVIDIA/TransformerEngine", "good": "47692de1", "bad": "54083aa3",
                           "judge": "correctness", "selection": "contracts", "status": "finished",
                           "commits": 2, "culprit": "54083aa3", "culprit_subject": "a subject",
                           "steps": [{"position": 1, "sha": "54083aa3", "verdict": "bad",
                                      "evidence": {"case": "x"}}]},
}  # fmt: skip


def json_leaves(value, path=()) -> list[tuple]:
    """The path of every string and number in a JSON value."""
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in json_leaves(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in json_leaves(item, (*path, index))]
    return [path]


JSON_SITES = [(url, leaf) for url, body in JSON_BODIES.items() for leaf in json_leaves(body)]


def test_json_bodies_cover_every_operation_that_takes_json(store):
    server, _ = store
    with server.client() as client:
        paths = client.get("/openapi.json").json()["paths"]
    taking_json = {path for path, operations in paths.items() for operation in operations.values()
                   if "application/json" in operation.get("requestBody", {}).get("content", {})}  # fmt: skip
    assert taking_json == {url.replace("/1/", "/{alert_id}/") for url in JSON_BODIES}


@HOSTILE
@given(
    site=st.sampled_from(JSON_SITES),
    value=st.one_of(hostile.surrogates(), hostile.nuls(), hostile.long_texts(), hostile.huge_ints(),
                    hostile.non_finite(), hostile.deep(), hostile.wrapped()),
)  # fmt: skip
def test_json_bodies(store, site, value):
    """Hostile values at every leaf of every JSON body, sent as raw JSON text (lone surrogates escaped)."""
    server, _ = store
    url, leaf = site
    body = json.loads(json.dumps(JSON_BODIES[url]))
    container = body
    for key in leaf[:-1]:
        container = container[key]
    container[leaf[-1]] = SENTINEL
    content = json.dumps(body).replace(json.dumps(SENTINEL), value).encode("utf-8", "surrogatepass")
    TRIED[("json_body", backend_of(server))] += 1
    with server.client() as client:
        answer = client.post(url, content=content, headers={"content-type": "application/json"})
    FIVE_XX[("json_body", backend_of(server))] += answer.status_code >= 500
    assert answer.status_code < 500, f"POST {url} {leaf}: {answer.status_code} {answer.text[:300]}"
    answer.json()  # a 4xx says what is wrong, as JSON


def test_every_page_reads_after_the_hostile_uploads(store):
    """Whatever the hostile uploads stored (Infinity used to be stored, and its series' points.json
    failed from then on): every series, case and run, in the API and the dashboard, still reads."""
    server, engine = store
    with engine.connect() as conn:
        series = conn.execute(text("SELECT id FROM series")).scalars().all()
        cases = conn.execute(text("SELECT id FROM cases")).scalars().all()
        runs = conn.execute(text("SELECT id FROM runs")).scalars().all()
    urls = [f"/api/v1/series/{i}" for i in series] + [f"/series/{i}/points.json" for i in series]
    urls += [f"/series/{i}" for i in series] + [f"/series/{i}/plot.svg" for i in series[:20]]
    urls += [f"/series/{i}/points.json?pr=7" for i in series]
    urls += [f"/case/{i}" for i in cases] + [f"/runs/{i}" for i in runs] + [f"/api/v1/runs/{i}" for i in runs]
    urls += ["/", "/matrix", "/releases", "/runs", "/machines", "/alerts", "/pr/7", "/api/v1/runs", "/api/v1/cases",
             "/api/v1/detections", "/api/v1/alerts", "/api/v1/verdicts/latest", "/api/v1/prs/7/comparisons"]  # fmt: skip
    with server.client() as client:
        for url in urls:
            TRIED[("page_read_after", backend_of(server))] += 1
            answer = client.get(url)
            FIVE_XX[("page_read_after", backend_of(server))] += answer.status_code >= 500
            assert answer.status_code < 500, f"{url}: {answer.text[:300]}"
            assert answer.status_code == 200 or url.endswith("prs/7/comparisons"), (
                f"{url}: {answer.status_code}"
            )


def test_an_infinite_value_stored_by_an_older_version_reads_as_a_gap(store):
    """Uploads used to store Infinity as a value; the series' points.json failed on it from then on."""
    server, engine = store
    with write_connection(engine) as conn:  # BEGIN IMMEDIATE: the server may be writing too
        result_id, series_id, run_id, value = conn.execute(
            text("SELECT id, series_id, run_id, value FROM results WHERE status = 'ok' ORDER BY id LIMIT 1")
        ).one()
        conn.execute(
            text("UPDATE results SET value = :inf WHERE id = :id"), {"inf": float("inf"), "id": result_id}
        )
    try:
        with server.client() as client:
            answer = client.get(f"/series/{series_id}/points.json", params={"last": "all"})
        assert answer.status_code == 200, answer.text
        [point] = [p for p in answer.json()["points"] if p["run"] == run_id]
        assert point["value"] is None
    finally:
        with write_connection(engine) as conn:
            conn.execute(text("UPDATE results SET value = :v WHERE id = :id"), {"v": value, "id": result_id})


@pytest.fixture(scope="module", autouse=True)
def report_counts(request):
    yield
    COUNTS_FILE.parent.mkdir(exist_ok=True)
    by_database: dict[str, dict[str, dict[str, int]]] = {}
    for (kind, backend), count in sorted(TRIED.items()):
        by_database.setdefault(backend, {})[kind] = {"tried": count, "5xx": FIVE_XX[(kind, backend)]}
    COUNTS_FILE.write_text(json.dumps(by_database, indent=1) + "\n")
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        for backend, kinds in by_database.items():
            listed = ", ".join(f"{kind} {c['tried']}" for kind, c in kinds.items())
            failed = sum(c["5xx"] for c in kinds.values())
            reporter.write_line(f"hostile inputs tried on {backend}, {failed} answered 5xx: {listed}")
