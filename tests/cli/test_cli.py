"""The `tewatch` commands of the service, run as processes (forked from one that imported the CLI,
tests/served.py; the last two tests start fresh interpreters)."""

from __future__ import annotations

import subprocess
import sys

from tests.served import run_cli
from tests.uploads import TINY
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import TokenScope
from tewatch.store.writes.tokens import token_scope

CLI = [sys.executable, "-c", "from tewatch.cli import main; main()"]


def tewatch(*args: str) -> subprocess.CompletedProcess:
    return run_cli(list(args), timeout=300)


def test_token_create_prints_a_working_token_last_and_stores_only_its_hash(db_url):
    done = tewatch("token", "create", "--name", "gpu-runner", "--db", db_url)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip().splitlines()[-1]
    engine = make_engine(db_url)
    with engine.connect() as conn:
        assert token_scope(conn, token) is TokenScope.upload
        assert token_scope(conn, token + "x") is None
        stored = conn.exec_driver_sql("SELECT token_hash FROM api_tokens").scalars().all()
    engine.dispose()
    assert token not in stored and len(stored[0]) == 64


def test_upload_prints_one_line_per_run_and_fails_clearly(live_server):
    done = tewatch(
        "upload", str(TINY), "--url", live_server.url, "--token", live_server.token, "--branch", "cli"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2 and all(" created: " in line for line in lines)
    again = tewatch(
        "upload", str(TINY), "--url", live_server.url, "--token", live_server.token, "--branch", "cli"
    )
    assert all(" already stored: " in line for line in again.stdout.strip().splitlines())
    bad = tewatch("upload", str(TINY), "--url", live_server.url, "--token", "wrong")
    assert bad.returncode == 1 and "HTTP 401" in bad.stderr
    half_pr = tewatch(
        "upload", str(TINY), "--url", live_server.url, "--token", live_server.token, "--pr", "7"
    )
    assert half_pr.returncode == 1 and "--pr and --base go together" in half_pr.stderr


def test_upload_of_a_folder_without_results_fails(tmp_path):
    done = tewatch("upload", str(tmp_path), "--url", "http://127.0.0.1:9", "--token", "t")
    assert done.returncode == 1 and "no asv results files" in done.stderr


def test_db_upgrade_current_and_reparse(live_server):
    done = tewatch("db", "current", "--db", live_server.db_url)
    assert done.returncode == 0 and "current: 0" in done.stdout
    tewatch(
        "upload", str(TINY), "--url", live_server.url, "--token", live_server.token, "--branch", "reparse"
    )
    reparse = tewatch("db", "reparse", "--db", live_server.db_url)
    assert reparse.returncode == 0, reparse.stderr
    assert "14 results, 8 verdicts" in reparse.stdout


def test_upload_line_says_which_counts_are_asv_results_and_which_verdicts():
    from tewatch.cli.upload import _stored_line

    body = {
        "run_id": 5,
        "created": True,
        "results": {"ok": 200, "failed": 9, "skipped": 3},
        "verdicts": {"error": 9, "fail_accuracy": 2, "pass": 189, "unsupported": 12},
    }
    line = _stored_line("f7d8c16d.json", body)
    assert line == (
        "run 5 created: f7d8c16d.json (asv results: 200 measured, 9 failed to run, 3 skipped; "
        "case verdicts: 189 pass, 2 fail_accuracy, 9 error, 12 unsupported)"
    )
    assert line.count("failed") == 1, "one word for one thing"
    empty = _stored_line("x.json", {"run_id": 6, "created": False, "results": {}, "verdicts": {}})
    assert empty == "run 6 already stored: x.json (asv results: none; case verdicts: none)"


def test_a_pull_request_upload_says_when_its_merge_base_has_no_runs_there(live_server):
    import json

    commit = min(
        json.loads(p.read_text())["commit_hash"] for p in TINY.glob("*/*.json") if p.name != "machine.json"
    )
    args = ["upload", str(TINY), "--url", live_server.url, "--token", live_server.token]
    assert tewatch(*args, "--branch", "main").returncode == 0
    unmeasured = "0bad" + "0" * 36
    lone = tewatch(*args, "--pr", "7", "--base", unmeasured)
    assert lone.returncode == 0, lone.stderr
    assert f"warning: the merge base {unmeasured[:12]} has no runs on " in lone.stderr
    assert "tewatch run --ab" in lone.stderr
    measured = tewatch(*args, "--pr", "7", "--base", commit)
    assert measured.returncode == 0 and "warning" not in measured.stderr, measured.stderr


def test_help_texts_wrap_where_the_terminal_ends_not_where_the_source_does():
    """On a terminal wide enough, each command's description in `tewatch --help` is one line: a line break in
    the source does not break it."""
    import os

    done = subprocess.run(
        [*CLI, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "COLUMNS": "1000", "NO_COLOR": "1"},
    )
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "Commands" in line) + 1
    rows = [line.strip("│").rstrip() for line in lines[start:] if line.startswith("│")]
    assert len(rows) >= 12, rows
    names = [row.split()[0] for row in rows if not row.startswith("  ")]
    assert len(names) == len(rows), [row for row in rows if row.startswith("  ")]  # no continuation lines
    assert {"upload", "export", "eval-detector", "run"} <= set(names)


def test_the_cli_starts_without_the_statistics():
    """Every `tewatch` command starts by importing the CLI: scipy (a second and more) waits until a
    command that compares runs."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, tewatch.cli; print('scipy' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "False"
