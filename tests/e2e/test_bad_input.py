"""Bad uploads get a 4xx that says what is wrong, and the store stays exactly as it was."""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from tests.conftest import start_server, stop_server
from tests.uploads import files_of, parts_of, post_run, tiny_run


def _edit_json(parts, part, edit, index=0):
    name, content = parts[part][index]
    data = json.loads(content)
    edit(data)
    parts[part][index] = (name, json.dumps(data).encode())


def malformed_result(parts):
    name, content = parts["result"][0]
    parts["result"][0] = (name, content.replace(b'"results": {', b'"results": {,', 1))


def truncated_result(parts):
    name, content = parts["result"][0]
    parts["result"][0] = (name, content[: len(content) // 2])


def wrong_asv_version(parts):
    _edit_json(parts, "result", lambda d: d.update(version=3))


def version_1_without_results(parts):
    """asv's older format (read as asv reads it) with a key asv needs missing."""
    _edit_json(parts, "result", lambda d: (d.update(version=1), d.pop("results")))


def unknown_case_field(parts):
    _edit_json(parts, "cases", lambda d: d["verdict"].update(flaky=True))


def unknown_run_field(parts):
    _edit_json(parts, "run", lambda d: d.update(hostname="gpu-7"))


def nan_in_case_record(parts):
    name, content = parts["cases"][0]
    parts["cases"][0] = (name, content.replace(b'"schema"', b'"wall": NaN, "schema"', 1))


def nan_as_metric_value(parts):
    name, content = parts["cases"][0]
    data = json.loads(content)
    data["verdict"]["value"] = "NAN_TOKEN"
    parts["cases"][0] = (name, json.dumps(data).replace('"NAN_TOKEN"', "NaN").encode())


def bad_verdict_status(parts):
    _edit_json(parts, "cases", lambda d: d["verdict"].update(status="flaky"))


def string_result_value(parts):
    _edit_json(parts, "result", lambda d: d["results"]["ops.track_share"].__setitem__(0, ["fast"]))


def wrong_combination_count(parts):
    _edit_json(parts, "result", lambda d: d["results"]["ops.Scale.time_scale"][0].pop())


def _raw_at(part, path, raw, index=0):
    """Put `raw` JSON text (NaN, Infinity, huge integers, escapes json.dumps never writes) at `path`."""

    def edit(parts):
        def place(data):
            target = data
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = "@@RAW@@"

        name, content = parts[part][index]
        data = json.loads(content)
        place(data)
        parts[part][index] = (name, json.dumps(data).replace('"@@RAW@@"', raw).encode())

    return edit


infinite_result = _raw_at("result", ["results", "ops.track_share", 0, 0], "Infinity")
huge_integer_result = _raw_at("result", ["results", "ops.track_share", 0, 0], "1" + "0" * 400)
huge_stats_number = _raw_at("result", ["results", "ops.Scale.time_scale", 9, 0], str(2**64))
nan_date = _raw_at("result", ["date"], "NaN")
far_date = _raw_at("result", ["date"], "1e20")
deep_nesting = _raw_at("run", ["capabilities"], "[" * 3000 + "]" * 3000)
huge_param_in_record = _raw_at("cases", ["params", "mode"], str(2**64))
huge_gpu_count = _raw_at("machine", ["gpu_count"], json.dumps(str(2**63)))
year_one_started_at = _raw_at("run", ["started_at"], '"0001-01-01T00:00:00+05:00"')


def _renamed_benchmark(name_json):
    def edit(parts):
        for part in ("result", "benchmarks"):
            file_name, content = parts[part][0]
            data = json.loads(content)
            table = data["results"] if part == "result" else data
            table["@@NAME@@"] = table.pop("ops.track_share")
            parts[part][0] = (file_name, json.dumps(data).replace('"@@NAME@@"', name_json).encode())

    return edit


nul_in_benchmark_name = _renamed_benchmark('"ops.track\\u0000share"')
surrogate_in_benchmark_name = _renamed_benchmark('"ops.track\\ud800share"')


def round_sizes_not_the_samples(parts):
    """An A/B run whose records say the rounds held more samples than the results file has."""
    _edit_json(parts, "run", lambda d: d.update(ab={"session": "s1", "side": "head", "rounds": 2}))
    for index in range(len(parts["cases"])):
        _edit_json(parts, "cases", lambda d: d.update(round_sizes={"time_scale": [1, 1000]}), index)


def missing_machine(parts):
    del parts["machine"]


def unknown_part(parts):
    parts["profile"] = [("profile.json", b"{}")]


def not_utf8(parts):
    parts["run"][0] = ("run.json", b"\xff\xfe{}")


def stderr_log_expanding_past_the_limit(parts):
    parts["asv_stderr"] = [("asv-stderr.log.gz", gzip.compress(b"\n" * (64 * 1024 * 1024 + 1), mtime=0))]


def stderr_log_cut_short(parts):
    packed = gzip.compress(b"ops.track_share failed\n" * 100, mtime=0)
    parts["asv_stderr"] = [("asv-stderr.log.gz", packed[: len(packed) // 2])]


CASES = [
    (malformed_result, 400, ["result", "malformed JSON", "line 1 column"]),
    (truncated_result, 400, ["result", "malformed JSON"]),
    (wrong_asv_version, 422, ["result", "version", "not supported"]),
    (version_1_without_results, 422, ["result", "results", "missing in a version 1 results file"]),
    (unknown_case_field, 422, ["cases/", "verdict.flaky", "unknown field"]),
    (unknown_run_field, 422, ["run", "hostname", "unknown field"]),
    (nan_in_case_record, 422, ["cases/", "wall", "unknown field"]),
    (nan_as_metric_value, 422, ["cases/", "verdict.value", "finite number"]),
    (bad_verdict_status, 422, ["cases/", "verdict.status"]),
    (string_result_value, 422, ["result", "results.ops.track_share.result[0]"]),
    (wrong_combination_count, 422, ["result", "results.ops.Scale.time_scale.result", "4 entries"]),
    (round_sizes_not_the_samples, 422, ["cases/", "round_sizes.time_scale", "round sizes add up to 1001"]),
    (missing_machine, 422, ["missing file part", "machine"]),
    (unknown_part, 422, ["unknown file part", "profile"]),
    (not_utf8, 400, ["run", "not UTF-8"]),
    (infinite_result, 422, ["result", "results.ops.track_share.result[0]", "NaN (asv's skip)"]),
    (huge_integer_result, 422, ["result", "results.ops.track_share.result[0]", "range of a float"]),
    (huge_stats_number, 422, ["result", "results.ops.Scale.time_scale.stats_number[0]", "out of range"]),
    (nan_date, 422, ["result", "field date", "milliseconds since the epoch"]),
    (far_date, 422, ["result", "field date", "1970-01-01 to before 3000-01-01"]),
    (deep_nesting, 400, ["run", "nested more than 200 levels"]),
    (huge_param_in_record, 422, ["cases/", "params.mode", "out of range"]),
    (huge_gpu_count, 422, ["machine", "gpu_count", "out of range"]),
    (year_one_started_at, 422, ["run", "started_at", "out of range"]),
    (nul_in_benchmark_name, 422, ["result", "NUL character"]),
    (surrogate_in_benchmark_name, 400, ["result", "line 1 column", "lone UTF-16 surrogate"]),
    (stderr_log_expanding_past_the_limit, 422, ["asv_stderr", "expands past 64 MiB"]),
    (stderr_log_cut_short, 422, ["asv_stderr", "cut short"]),
]


@pytest.mark.parametrize(("breakage", "status", "words"), CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_upload_is_refused_and_changes_nothing(live_server, breakage, status, words):
    parts = parts_of(tiny_run(0))
    breakage(parts)
    before = live_server.counts()
    with live_server.client() as client:
        answer = post_run(client, parts, branch="bad-input")
    assert answer.status_code == status, answer.text
    detail = answer.json()["detail"]
    for word in words:
        assert word in detail, f"{word!r} not in {detail!r}"
    assert live_server.counts() == before


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"pr_number": str(2**63)}, ["pr_number", "out of range", "2147483647"]),
        ({"commit_date": "0001-01-01T00:00:00+05:00"}, ["commit_date", "out of range"]),
        ({"commit_date": "9999-12-31T23:59:59-05:00"}, ["commit_date", "out of range"]),
        ({"branch": "a\x00b"}, ["branch", "NUL character"]),
        ({"branch": "b" * 201}, ["branch", "201 characters", "at most 200"]),
    ],
    ids=["pr-2^63", "year-1", "year-9999", "nul-branch", "long-branch"],
)
def test_bad_form_field_is_refused_and_changes_nothing(live_server, fields, words):
    before = live_server.counts()
    with live_server.client() as client:
        answer = post_run(client, parts_of(tiny_run(0)), **fields)
    assert answer.status_code == 422, answer.text
    for word in words:
        assert word in answer.json()["detail"], answer.json()
    assert live_server.counts() == before


def test_malformed_json_error_points_at_line_and_column(live_server):
    parts = parts_of(tiny_run(0))
    parts["run"][0] = ("run.json", b'{\n  "schema": "tewatch.run/1",\n  "profile": ci\n}')
    with live_server.client() as client:
        body = post_run(client, parts).json()
    assert (body["file"], body["line"], body["column"]) == ("run", 3, 14)


@pytest.mark.parametrize(
    ("token", "word"), [(None, "missing token"), ("not-a-token", "unknown or revoked"), ("", "missing token")]
)
def test_upload_needs_a_valid_token(live_server, token, word):
    before = live_server.counts()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=live_server.url, headers=headers) as client:
        answer = client.post("/api/v1/runs", files=files_of(parts_of(tiny_run(0))))
    assert answer.status_code == 401
    assert word in answer.json()["detail"]
    assert live_server.counts() == before


def test_reads_stay_open_without_a_token(live_server):
    with httpx.Client(base_url=live_server.url) as client:
        assert client.get("/api/v1/runs").status_code == 200


@pytest.fixture(scope="module")
def small_limit_server(module_db_url, tmp_path_factory):
    server = start_server(
        module_db_url, tmp_path_factory.mktemp("small") / "serve.log", "--max-upload-mb", "0.05"
    )
    yield server
    stop_server(server)


def test_body_over_the_limit_is_refused_from_its_length(small_limit_server):
    server = small_limit_server
    parts = parts_of(tiny_run(0))
    parts["asv_stderr"] = [("asv-stderr.log", b"x" * 200_000)]
    before = server.counts()
    with server.client() as client:
        answer = post_run(client, parts)
    assert answer.status_code == 413
    assert "upload limit of 52428 bytes" in answer.json()["detail"]
    assert server.counts() == before


def test_streamed_body_over_the_limit_is_refused_while_reading(small_limit_server):
    """No Content-Length (chunked): the limit applies to the bytes as they arrive."""
    server = small_limit_server
    request = httpx.Request("POST", "/", files=files_of(parts_of(tiny_run(0))))
    body, content_type = request.read() + b"\r\n" * 40_000, request.headers["content-type"]

    def chunks():
        for start in range(0, len(body), 16_384):
            yield body[start : start + 16_384]

    before = server.counts()
    with server.client() as client:
        answer = client.post("/api/v1/runs", content=chunks(), headers={"content-type": content_type})
    assert answer.status_code == 413
    assert server.counts() == before
