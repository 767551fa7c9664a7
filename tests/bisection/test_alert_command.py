"""An open correctness alert's page offers the exact `tewatch bisect` command: the last run where the case
passed as good, the failing run as bad, the case as the selection."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.uploads import parts_of, post_run, tiny_run

FLIPPED = "ops.Compile-e2da423667fa"  # error in both fixture runs; made to pass in the first


@pytest.fixture(scope="module")
def api(in_process_app):
    return in_process_app


def passing_first_run() -> dict:
    parts = parts_of(tiny_run(0))
    cases = []
    for name, content in parts["cases"]:
        record = json.loads(content)
        if name.startswith(FLIPPED):
            record["verdict"] = {"status": "pass", "check": "compiled_vs_eager"}
        cases.append((name, json.dumps(record).encode()))
    parts["cases"] = cases
    return parts


def test_an_open_alert_offers_the_bisect_command(api) -> None:
    with api.client() as client:
        for parts in (passing_first_run(), parts_of(tiny_run(1))):
            answer = post_run(client, parts, branch="main", repo="NVIDIA/TransformerEngine")
            assert answer.status_code == 201, answer.text
        runs = sorted(client.get("/api/v1/runs").json()["items"], key=lambda r: r["id"])
        good, bad = (run["commit_sha"] for run in runs)
        (alert,) = [
            a
            for a in client.get("/api/v1/alerts", params={"status": "open", "kind": "correctness"}).json()
            if "ops.Compile" in a["title"] and "default" in a["title"]
        ]
        page = client.get(f"/alerts/{alert['id']}")
        assert page.status_code == 200
        command = page.text.split('<pre id="bisect-command">')[1].split("</pre>")[0].replace("&#39;", "'")
        words = shlex.split(command)
        assert words[:2] == ["tewatch", "bisect"]
        options = dict(zip(words[2::2], words[3::2], strict=True))
        assert options["--good"] == good and options["--bad"] == bad
        assert options["--bench"] == r"^ops\.Compile\." and options["--judge"] == "correctness"
        assert options["--alert"] == str(alert["id"])
        assert client.get("/alerts/999999").status_code == 404
