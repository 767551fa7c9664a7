"""Build upload bodies from fixture runs, and variants of them with one thing broken; upload a folder as a
user does, through the CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import fixture_results_dirs
from tests.served import run_cli
from tewatch.ingest.bundle import UploadBundle
from tewatch.ingest.discover import RunFiles, find_runs

TINY = Path(__file__).resolve().parent / "fixtures" / "asv-tiny" / "results"


def cli_upload(server, results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`tewatch upload RESULTS` to a live server with its token, `args` after."""
    return run_cli(["upload", str(results), "--url", server.url, "--token", server.token, *args], timeout=600)


def all_fixture_runs() -> list[RunFiles]:
    return [run for results_dir in fixture_results_dirs() for run in find_runs(results_dir)]


def tiny_run(index: int = 0) -> RunFiles:
    return find_runs(TINY)[index]


def parts_of(run: RunFiles) -> dict[str, list[tuple[str, bytes]]]:
    """part name -> [(file name, content)], editable before sending."""
    parts: dict[str, list[tuple[str, bytes]]] = {}
    for part, path in run.parts():
        parts.setdefault(part, []).append((path.name, path.read_bytes()))
    return parts


def files_of(parts: dict[str, list[tuple[str, bytes]]]) -> list[tuple[str, tuple[str, bytes, str]]]:
    return [
        (part, (name, content, "application/octet-stream"))
        for part, entries in parts.items()
        for name, content in entries
    ]


def post_run(client, parts: dict[str, list[tuple[str, bytes]]], **fields: str):
    return client.post("/api/v1/runs", files=files_of(parts), data=fields)


def post_tiny_history(client, branch: str) -> None:
    """The tiny fixture's two runs on `branch` and a pull request against the first."""
    for index, fields in [(0, {}), (1, {}), (1, {"pr_number": "7", "merge_base_sha": "47692de1"})]:
        answer = post_run(client, parts_of(tiny_run(index)), branch=branch, **fields)
        assert answer.status_code in (200, 201), answer.text


def post_folder_run(client, results_dir: Path, **fields: str):
    """Upload the one run an asv results folder holds (on branch main unless `fields` say otherwise)."""
    (run,) = find_runs(results_dir)
    return post_run(client, parts_of(run), **{"branch": "main", **fields})


def bundle_of(run: RunFiles, **metadata) -> UploadBundle:
    """The UploadBundle the upload API would build from this run (for ingest without a server)."""
    parts = parts_of(run)
    single = {part: entries[0][1] for part, entries in parts.items() if part != "cases"}
    return UploadBundle(**single, cases=parts.get("cases", []), **metadata)
