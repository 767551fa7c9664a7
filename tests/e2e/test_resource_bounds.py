"""What one request may cost is bounded, and uploaded text is drawn and written as plain text, against a
real `tewatch serve` on SQLite and PostgreSQL: each attack, the answer it gets, and nothing lost.

- a series of a million samples: the API answers in pages of thinned points, the plot draws 32 samples a
  point, and every stored sample is still counted;
- `$...$` in a TE version, a GPU model or a benchmark name is drawn as written (matplotlib's mathtext
  never sees it);
- query parameters the overview does not know make no new cache entry, and every case at once is never
  kept;
- a commit graph dating commits in the future, contradicting stored parents or closing a cycle across
  requests is refused, and a 422 for 300,000 bad commits lists 20 errors;
- error messages and GPU models in the pull request's report mention, reference and link nothing.
"""

from __future__ import annotations

import json
import re
import time
from html import unescape

import pytest
from markdown_it import MarkdownIt

from tests.alerts.receiver import Receiver
from tests.conftest import start_server, stop_server
from tests.uploads import parts_of, post_run, tiny_run
from tewatch.alerts.markdown_text import ZERO_WIDTH_SPACE

SAMPLES_PER_UPLOAD = 250_000
HEAVY_UPLOADS = 4
TIMED = "ops.Scale.time_scale"
SAMPLES_COLUMN = 11  # of asv's result_columns
DOLLARS = "$\\x$"


def edited_run(
    index: int,
    *,
    commit: str | None = None,
    date_ms: int | None = None,
    samples: int = 0,
    te_version: str | None = None,
    gpu_model: str | None = None,
    case_messages: dict[str, str] | None = None,
) -> dict[str, list[tuple[str, bytes]]]:
    """The tiny fixture's run `index`, filed under `commit` at `date_ms`, its first timed combination
    holding `samples` samples, with the TE version, GPU model and failing case messages given."""
    parts = parts_of(tiny_run(index))
    name, content = parts["result"][0]
    result = json.loads(content)
    if commit is not None:
        result["commit_hash"] = commit
        name = commit[:8] + name[8:]
    if date_ms is not None:
        result["date"] = date_ms
    if samples:
        result["results"][TIMED][SAMPLES_COLUMN][0] = [1e-4 + (i % 977) * 1e-8 for i in range(samples)]
    parts["result"][0] = (name, json.dumps(result).encode())
    if te_version is not None or gpu_model is not None:
        run = json.loads(parts["run"][0][1])
        run["versions"]["te"] = te_version if te_version is not None else run["versions"]["te"]
        if gpu_model is not None:
            run["gpu"]["model"] = gpu_model
            machine = json.loads(parts["machine"][0][1])
            machine["gpu_model"] = gpu_model
            parts["machine"][0] = (parts["machine"][0][0], json.dumps(machine).encode())
        parts["run"][0] = (parts["run"][0][0], json.dumps(run).encode())
    for i, (case_name, case_content) in enumerate(parts["cases"]):
        record = json.loads(case_content)
        message = (case_messages or {}).get(f"{record['case']}:{json.dumps(record['params'])}")
        if message is not None:
            record["verdict"] = {
                "status": "error",
                "check": "compiled_vs_eager",
                "exception_class": "RuntimeError",
                "message": message,
            }
            parts["cases"][i] = (case_name, json.dumps(record).encode())
    return parts


def uploaded(client, parts, **fields: str) -> int:
    answer = post_run(client, parts, **fields)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()["run_id"]


def series_of(client, gpu: str, benchmark: str = TIMED) -> list[dict]:
    cases = client.get("/api/v1/cases", params={"gpu": gpu, "limit": 1000}).json()
    return [s for c in cases["items"] for s in c["series"] if s["benchmark"] == benchmark]


@pytest.fixture(scope="module")
def heavy_series(live_server):
    """Four uploads on branch `heavy`, each with 250,000 samples in one result: (series id, run ids)."""
    with live_server.client() as client:
        runs = [
            uploaded(
                client,
                edited_run(
                    0,
                    commit=f"{i + 1:x}" * 40,
                    date_ms=1_790_000_000_000 + i * 3_600_000,
                    samples=SAMPLES_PER_UPLOAD,
                ),
                branch="heavy",
            )
            for i in range(HEAVY_UPLOADS)
        ]
        cases = client.get("/api/v1/cases", params={"branch": "heavy"}).json()
    ids = {
        s["id"]
        for c in cases["items"]
        for s in c["series"]
        if s["benchmark"] == TIMED
        and c["params"].get("backend") == "torch-ref"
        and c["params"].get("rank") == 2
    }
    assert len(ids) == 1, cases
    return ids.pop(), runs


def test_a_million_samples_are_answered_in_thinned_pages_and_none_is_lost(live_server, heavy_series):
    series_id, runs = heavy_series
    before = live_server.counts()
    with live_server.client() as client:
        whole = client.get(f"/api/v1/series/{series_id}", params={"branch": "heavy"})
        assert whole.status_code == 200
        assert len(whole.content) < 2_000_000  # the 1,000,000 samples as JSON would be 20 MB
        points = whole.json()["points"]
        assert [p["run_id"] for p in points] == runs
        assert all(p["sample_count"] == SAMPLES_PER_UPLOAD and len(p["samples"]) == 10_000 for p in points)
        assert whole.json()["next_offset"] is None

        paged, offset = [], 0
        while offset is not None:
            page = client.get(
                f"/api/v1/series/{series_id}",
                params={"branch": "heavy", "limit": 3, "offset": offset, "samples_per_point": 50},
            ).json()
            assert all(len(p["samples"]) == 50 for p in page["points"])
            paged[:0] = page["points"]
            offset = page["next_offset"]
        assert [p["run_id"] for p in paged] == runs

        for last in ("300", "all"):
            svg = client.get(f"/series/{series_id}/plot.svg", params={"branch": "heavy", "last": last})
            assert svg.status_code == 200 and svg.headers["content-type"].startswith("image/svg+xml")
            assert len(svg.content) < 1_000_000
            chart = client.get(f"/series/{series_id}/points.json", params={"branch": "heavy", "last": last})
            assert [len(p["samples"]) for p in chart.json()["points"]] == [32] * HEAVY_UPLOADS
        too_many = client.get(f"/api/v1/series/{series_id}", params={"samples_per_point": 10_001})
        assert too_many.status_code == 422
    assert live_server.counts() == before


def test_dollar_signs_in_uploaded_text_are_drawn_as_written(live_server):
    gpu = f"GPU {DOLLARS} \\frac{{1}}{{0}}"
    with live_server.client() as client:
        for i in range(2):
            uploaded(
                client,
                edited_run(i, commit=f"d{i}" * 20, te_version=f"2.20 {DOLLARS}", gpu_model=gpu),
                branch="dollars",
            )
        series = series_of(client, gpu)
        assert len(series) == 4
        for s in series:
            for scale in ("linear", "log"):
                svg = client.get(f"/series/{s['id']}/plot.svg", params={"branch": "dollars", "scale": scale})
                assert svg.status_code == 200, svg.text[:500]
                assert "2.20 $\\x$" in unescape(svg.text) and gpu in unescape(svg.text)
            assert client.get(f"/series/{s['id']}", params={"branch": "dollars"}).status_code == 200


def page_cache(client) -> tuple[int, int]:
    """(entries, bytes) of the rendered page contents the service keeps, from /metrics."""
    text = client.get("/metrics").text

    def gauge(name: str) -> int:
        return int(float(re.search(rf"^{name} (\S+)$", text, re.MULTILINE).group(1)))

    return gauge("tewatch_page_cache_entries"), gauge("tewatch_page_cache_bytes")


def test_unknown_parameters_make_no_new_cache_entry_and_every_case_at_once_is_never_kept(live_server):
    with live_server.client(token=None) as client:
        first = client.get("/")
        assert first.status_code == 200
        entries, held = page_cache(client)
        for k in range(64):
            assert client.get("/", params={"m": k}).status_code == 200
            assert client.get("/", params={"all": "1", "m": k}).status_code == 200
        assert page_cache(client) == (entries, held)
        # a filter the page knows is one more entry, whatever else comes with it
        for k in range(8):
            assert client.get("/", params={"gpu": "cpu", "m": k}).status_code == 200
        assert page_cache(client)[0] == entries + 1
        # the links a kept page carries name the parameters the page knows, never the others
        assert "m=attack" not in client.get("/", params={"gpu": "cpu", "m": "attack"}).text


def graph_counts(server) -> tuple[int, int]:
    """Rows of the stored commit graph and of the parents it awaits, read from the database."""
    from sqlalchemy import text

    from tewatch.store.engine.database import make_engine

    engine = make_engine(server.db_url)
    try:
        with engine.connect() as conn:
            return tuple(  # type: ignore[return-value]
                conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one()
                for table in ("commit_graph", "commit_graph_missing_parents")
            )
    finally:
        engine.dispose()


def latest_commit(client, branch: str) -> set[str]:
    verdicts = client.get("/api/v1/verdicts/latest", params={"branch": branch}).json()
    return {v["commit_sha"] for v in verdicts}


def test_a_commit_graph_cannot_freeze_a_branch(live_server):
    old, new = "0a" * 20, "0b" * 20
    with live_server.client() as client:
        uploaded(client, edited_run(0, commit=old, date_ms=1_790_000_000_000), branch="frozen")
        uploaded(client, edited_run(1, commit=new, date_ms=1_790_086_400_000), branch="frozen")
        assert latest_commit(client, "frozen") == {new}
        before = live_server.counts(), graph_counts(live_server)

        future = int(time.time()) + 7200
        answer = client.post(
            "/api/v1/commits/graph", json={"commits": [[new, 0, []], [old, 32503679999, []]]}
        )
        assert answer.status_code == 422 and "later than the service's clock allows" in answer.text
        answer = client.post("/api/v1/commits/graph", json={"commits": [[old, future, []]]})
        assert answer.status_code == 422
        assert (live_server.counts(), graph_counts(live_server)) == before

        # dates within the skew: the stored commits keep the dates their uploads gave
        answer = client.post(
            "/api/v1/commits/graph", json={"commits": [[new, 0, []], [old, int(time.time()), []]]}
        )
        assert answer.status_code == 200, answer.text
        assert latest_commit(client, "frozen") == {new}
        # nor can a later graph give the commits other parents
        other = client.post("/api/v1/commits/graph", json={"commits": [[old, 0, []], [new, 0, [old]]]})
        assert other.status_code == 422 and "parents never change" in other.text
        assert latest_commit(client, "frozen") == {new}


def test_an_upload_dated_past_the_clock_cannot_become_the_latest(live_server):
    now_ms = int(time.time() * 1000)
    with live_server.client() as client:
        kept = uploaded(client, edited_run(0, commit="0c" * 20, date_ms=now_ms), branch="dated")
        before = live_server.counts()
        answer = post_run(
            client, edited_run(1, commit="0d" * 20, date_ms=now_ms + 3 * 3_600_000), branch="dated"
        )
        assert answer.status_code == 422, answer.text
        assert answer.json()["file"] == "result" and answer.json()["field"] == "date"
        assert "later than the service's clock allows" in answer.json()["message"]
        assert live_server.counts() == before
        assert latest_commit(client, "dated") == {"0c" * 20} and kept


def test_a_cycle_sent_across_two_requests_is_refused(live_server):
    with live_server.client() as client:
        first = client.post(
            "/api/v1/commits/graph", json={"repo": "cycle", "commits": [["aaaa01", 1, ["bbbb01"]]]}
        )
        assert first.status_code == 200, first.text
        before = live_server.counts(), graph_counts(live_server)
        closing = client.post(
            "/api/v1/commits/graph",
            json={"repo": "cycle", "commits": [["cccc01", 2, ["aaaa01"]], ["bbbb01", 3, ["cccc01"]]]},
        )
        assert closing.status_code == 422, closing.text
        assert "cycle" in closing.json()["detail"] and "aaaa01" in closing.json()["detail"]
        assert (live_server.counts(), graph_counts(live_server)) == before
        # the missing parent on its own, with no path back, is placed
        fine = client.post("/api/v1/commits/graph", json={"repo": "cycle", "commits": [["bbbb01", 0, []]]})
        assert fine.status_code == 200, fine.text


def test_a_graph_of_300000_bad_commits_gets_a_short_422(live_server):
    commits = [[f"not-a-sha-{i}", 0, []] for i in range(300_000)]
    with live_server.client() as client:
        answer = client.post("/api/v1/commits/graph", json={"commits": commits})
        assert answer.status_code == 422
        assert len(answer.content) < 20_000
        detail = answer.json()["detail"]
        assert len(detail) == 21 and detail[-1]["msg"] == "and 299,980 more errors"
        assert client.get("/api/v1/health").status_code == 200


LIVE = [
    re.compile(r"(?<![\w`])@[A-Za-z0-9]"),
    re.compile(r"#\d"),
    re.compile(r"https?://evil|www\.evil", re.IGNORECASE),
]
HOSTILE_MESSAGE = (
    "@nvidia/te-maintainers **all tests pass** see https://evil.example/x www.evil.example "
    "NVIDIA/TransformerEngine#1234 a\\|b <img src=x onerror=alert(1)>"
)


@pytest.fixture
def loopback_server(db_url, tmp_path):
    """A real `tewatch serve` on a fresh store that may send webhooks to a loopback receiver."""
    server = start_server(db_url, tmp_path / "serve.log", env={"TEWATCH_WEBHOOK_ALLOW_LOOPBACK": "true"})
    yield server
    stop_server(server)


def test_the_pull_request_report_mentions_references_and_links_nothing(loopback_server):
    gpu = "@gpu-team H200 #7"
    compile_eager = f"ops.Compile:{json.dumps({'mode': 'eager'})}"
    with Receiver("r" * 32) as receiver, loopback_server.client() as client:
        subscribed = client.post(
            "/api/v1/webhooks",
            json={"url": receiver.url, "secret": "r" * 32, "event_types": ["pr.report"]},
        )
        assert subscribed.status_code == 201, subscribed.text
        base = "e1" * 20
        uploaded(client, edited_run(0, commit=base, gpu_model=gpu), branch="main")
        uploaded(
            client,
            edited_run(1, commit="e2" * 20, gpu_model=gpu, case_messages={compile_eager: HOSTILE_MESSAGE}),
            branch="feature",
            pr_number="77",
            merge_base_sha=base,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not receiver.accepted():
            time.sleep(0.25)
        client.delete(f"/api/v1/webhooks/{subscribed.json()['id']}")
    [report] = [json.loads(r.body)["data"] for r in receiver.accepted() if r.event_type == "pr.report"]
    markdown = report["markdown"]
    html = MarkdownIt("gfm-like", {"linkify": False}).render(markdown)
    assert "<img" not in html and "<strong>all" not in html
    shown = unescape(re.sub(r"<code>.*?</code>|<[^>]+>", " ", html))
    shown = shown.replace("PR #77", "PR")  # the report's own reference to its pull request, not uploaded
    for live in LIVE:
        assert not live.search(shown), (live.pattern, shown)
    row = next(line for line in markdown.splitlines() if "all tests pass" in line)
    assert row.count(" | ") == 3  # four cells: the message's pipe stays in its own
    assert "@" + ZERO_WIDTH_SPACE + "nvidia" in markdown
