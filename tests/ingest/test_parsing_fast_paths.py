"""The fast paths of ingest give exactly what the straightforward code gives, and the same errors."""

from __future__ import annotations

import gc
import json
import math
import threading

import pytest

from tests.conftest import FIXTURES
from tests.uploads import all_fixture_runs
from tewatch.ingest.asv_files import parse_results
from tewatch.ingest.errors import IngestError
from tewatch.ingest.fingerprints import cached_case_id, case_id, digest_of, series_fingerprint
from tewatch.ingest.jsonfile import load_json
from tewatch.ingest.records import CaseRecord, parse_record
from tewatch.store.engine.gc_pause import collector_paused
from tewatch.store.schema.limits import json_problem, json_text_is_storable

JSON_TEXTS = [
    b'{"a": [1, 2.5, -0.0, 1e400, NaN, -Infinity], "b": {"c": null, "d": true}}',
    b'{"a": 1, "a": 2}',
    b'{"big": 123456789012345678901234567890, "esc": "\\u00e9\\n\\"", "raw": "\xc3\xa9"}',
    b'{"pair": "\\ud83d\\ude00"}',  # a surrogate pair is one character
    b"\xef\xbb\xbf{}",  # a byte-order mark is refused
    b'{"a": 1} x',
    b'["\xff"]',
    b"  ",
    b'{"a": 1,}',
]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _json_module(content: bytes):
    try:
        return json.loads(content.decode("utf-8"))
    except ValueError:
        return "refused"


@pytest.mark.parametrize("content", JSON_TEXTS)
def test_load_json_equals_the_json_module(content):
    try:
        ours = load_json(content, "f")
    except IngestError:
        ours = "refused"
    assert _same(ours, _json_module(content))


@pytest.mark.parametrize(
    ("content", "message", "line", "column"),
    [
        (b'{"lone": "\\ud800"}', "lone UTF-16 surrogate", 1, 17),  # the json module would keep it
        (b'["ok", "\\udc00"]', "lone UTF-16 surrogate", 1, 14),
        (b"[" * 300 + b"]" * 300, "nested more than 200 levels", 1, 202),
        (b"[" * 3000 + b"]" * 3000, "nested more than 200 levels", None, None),  # RecursionError there
        (b"[1" + b"0" * 5000 + b"]", "too many digits", 1, 4303),  # ValueError there
    ],
    ids=["lone-high", "lone-low", "deep", "deeper-than-python", "digits"],
)
def test_load_json_refuses_what_the_json_module_takes_but_no_column_keeps(content, message, line, column):
    with pytest.raises(IngestError) as refused:
        load_json(content, "f")
    assert message in refused.value.message and refused.value.status_code == 400
    assert (refused.value.line, refused.value.column) == (line, column)


def _record_or_error(content: bytes):
    try:
        return parse_record(CaseRecord, content, "cases/x.json").model_dump()
    except IngestError as exc:
        return str(exc)


def _record_the_slow_way(content: bytes):
    try:
        data = json.loads(content.decode("utf-8"))
    except ValueError:
        return "refused"
    try:
        record = CaseRecord.model_validate(data).model_dump()
    except ValueError:
        return "refused"
    return "refused" if json_problem(record) else record  # what the store cannot keep


def _case_files() -> dict[str, list[bytes]]:
    """Every case file of the fixtures, by fixture folder, and edited copies of the first one."""
    folders: dict[str, list[bytes]] = {}
    for run in all_fixture_runs():
        folder = run.result.relative_to(FIXTURES).parts[0]
        folders.setdefault(folder, []).extend(path.read_bytes() for path in run.cases)
    base = json.loads(next(iter(folders.values()))[0])
    variants = [
        {**base, "params": {"x": float("nan")}},
        {**base, "labels": {"rank": 1, "flag": True, "scale": 1.0, "none": None}},
        {**base, "verdict": {**base["verdict"], "value": float("inf")}},
        {**base, "verdict": {**base["verdict"], "details": {"a": None, "b": float("nan")}}},
        {**base, "verdict": {**base["verdict"], "details": {"b": [float("-inf")]}}},
        {**base, "verdict": {**base["verdict"], "message": "a\x00b"}},
        {**base, "perturbations": {"x": 2**64}},
        {**base, "recorded_at": 1_790_000_000},
        {**base, "extra": 1},
        [base],
    ]
    text = json.dumps(base)
    details = [  # what the text alone must send to the value-by-value check
        "1e400",
        "-2e-400",
        "[1.5e300, 4611686018427387904]",  # 19 digits, within 64 bits
        "18446744073709551616",
        "-18446744073709551616",
        "[0.00062923676153300281, 1.5]",  # a fraction's 19 digits: storable as parsed
        "0.12345678901234567890123456789012345678901",  # a second run of 19 digits, after a digit
        "12345678901234567890.5",
        '"\\ud800"',
        '"NaN and Infinity are words"',
        "[" * 190 + "]" * 190,
        "[" + "[], " * 210 + "[]]",  # more brackets than levels
    ]
    raw = [text.replace('"verdict": {', f'"verdict": {{"details": {{"x": {d}}}, ', 1) for d in details]
    edited = [json.dumps(v).encode() for v in variants] + [r.encode() for r in raw]
    return {**folders, "edited": [*edited, b'{"schema": "tewatch.case/1"}']}


def _parses_as_the_model_says(content: bytes) -> bool:
    ours = _record_or_error(content)
    slow = _record_the_slow_way(content)
    if slow == "refused":
        return isinstance(ours, str) and ours.startswith("cases/x.json")
    return _same(ours, slow)


# one test per fixture folder, each file checked: some 2,800 files, a test each, cost more in pytest's
# bookkeeping than in parsing
CASE_FILES = _case_files()


@pytest.mark.parametrize("contents", list(CASE_FILES.values()), ids=list(CASE_FILES))
def test_case_records_parse_as_the_model_says(contents):
    differing = [content for content in contents if not _parses_as_the_model_says(content)]
    assert not differing, (
        f"{len(differing)} of {len(contents)} files parse otherwise, first: {differing[0][:300]!r}"
    )


def test_series_fingerprint_is_the_digest_of_its_definition():
    for benchmark in ["gemm.Gemm.time_gemm", 'odd "name" \\ é \n \u2028 \x00', ""]:
        assert series_fingerprint(benchmark, "ab12") == digest_of({"benchmark": benchmark, "case": "ab12"})


def test_cached_case_id_keeps_json_types_apart():
    for params in [{"rank": 1}, {"rank": True}, {"rank": 1.0}, {"rank": "1"}, {"a": None, "b": [1]}, {}]:
        assert cached_case_id("m.C", params) == case_id("m.C", params)
    assert len({cached_case_id("m.C", {"rank": v}) for v in (1, True, 1.0, "1")}) == 4


def _results_file(**columns) -> bytes:
    names = ["result", "params", "version", "started_at", "duration", *columns]
    row = [[1.0, 2.0], [["'a'", "'b'"]], "v1", 1_790_000_000_000, 1.0, *columns.values()]
    document = {"commit_hash": "ab", "env_name": "e", "version": 2, "result_columns": names,
                "results": {"m.C.time_x": row}}  # fmt: skip
    return json.dumps(document).encode()


def test_results_statistics_are_checked_column_by_column():
    parsed = parse_results(
        _results_file(
            stats_q_25=[0.5, float("inf")], stats_number=[1, 2.0], samples=[[1.0, float("nan")], None]
        )
    )
    first, second = parsed.benchmarks[0].combos
    assert (first.q_25, second.q_25) == (0.5, None)
    assert (first.number, second.number) == (1, 2) and isinstance(second.number, int)
    assert (first.samples, second.samples) == ([1.0], None)
    with pytest.raises(IngestError) as bad:
        parse_results(_results_file(stats_q_75=[0.5, "fast"]))
    assert bad.value.field == "results.m.C.time_x.stats_q_75[1]"
    with pytest.raises(IngestError) as bad:
        parse_results(_results_file(samples=[[1.0], [2.0, "x"]]))
    assert bad.value.field == "results.m.C.time_x.samples[1]"


@pytest.mark.parametrize(
    ("columns", "field", "words"),
    [
        ({"stats_number": [1, 2**31]}, "stats_number[1]", "out of range"),
        ({"stats_repeat": [-1, 5]}, "stats_repeat[0]", "out of range"),
        ({"stats_number": [1, 3e9]}, "stats_number[1]", "out of range"),
        ({"stats_q_25": [0.5, 10**400]}, "stats_q_25[1]", "range of a float"),
        ({"samples": [[1.0], [2.0, 10**400]]}, "samples[1]", "range of a float"),
    ],
)
def test_results_cells_the_store_cannot_keep_are_refused_by_name(columns, field, words):
    with pytest.raises(IngestError) as refused:
        parse_results(_results_file(**columns))
    assert refused.value.field == f"results.m.C.time_x.{field}" and words in refused.value.message


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), 10**400])
def test_an_infinite_or_too_large_result_is_refused_and_nan_stays_a_skip(value):
    document = json.loads(_results_file())
    document["results"]["m.C.time_x"][0] = [float("nan"), value]
    with pytest.raises(IngestError) as refused:
        parse_results(json.dumps(document).encode())
    assert refused.value.field == "results.m.C.time_x.result[1]"
    document["results"]["m.C.time_x"][0] = [float("nan"), None]
    skipped, failed = (c.value for c in parse_results(json.dumps(document).encode()).benchmarks[0].combos)
    assert math.isnan(skipped) and failed is None


def test_results_without_the_optional_columns_parse():
    combos = parse_results(_results_file()).benchmarks[0].combos
    assert [(c.value, c.samples, c.number) for c in combos] == [(1.0, None, None), (2.0, None, None)]


def test_collector_comes_back_after_overlapping_pauses():
    assert gc.isenabled()
    inside, release = threading.Event(), threading.Event()

    def other_upload():
        with collector_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other_upload)
    with collector_paused():
        thread.start()
        inside.wait(10)
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other upload is still in its pause
    release.set()
    thread.join(10)
    assert gc.isenabled()


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": [1.5, {"b": float("nan")}]}, "a[1].b"),
        ({"a": None, "b": [float("-inf")]}, "b[0]"),
        ({"a": "null", "b": float("inf")}, "b"),
        ({"text": "a\x00b"}, "text"),
        ({"a\x00": 1}, ""),
        ({"n": 2**64}, "n"),
        ({"s": "\ud800"}, "s"),
        ({1: "x"}, ""),
    ],
)
def test_json_problem_finds_what_no_json_column_keeps(value, where):
    problem = json_problem(value)
    assert problem is not None and problem[0] == where


@pytest.mark.parametrize(
    "value", [{"a": None, "b": [1, 2.5, "nullable"]}, {"a": [None, True, -(2**63)], "t": "\u00e9"}, [], None]
)
def test_json_problem_keeps_json_values_with_or_without_null(value):
    assert json_problem(value) is None


@pytest.mark.parametrize(
    ("text", "storable"),
    [
        (b'{"value": 0.0006292367615330028}', True),  # a float's fraction of 19 digits
        (b'{"value": 4611686018427387904}', False),  # 19 digits: maybe beyond 64 bits, looked at
        (b'{"value": -18446744073709551616}', False),
        (b'{"value": 0.1234567890123456789012345678901234567890}', False),  # a second run, after a digit
        (b'{"value": 1.5e-300}', False),
        (b'{"message": "\\u00e9"}', False),
        (b'{"value": 1.5e-05, "rank": 3}', True),
    ],
)
def test_a_record_text_is_storable_as_parsed_unless_it_may_hold_what_no_column_keeps(text, storable):
    assert json_text_is_storable(text) is storable
