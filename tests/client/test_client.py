"""tewatch.client against a real server holding the bundled H200 history: typed frames, paging, errors."""

from __future__ import annotations

import re
import subprocess
import sys

import httpx
import pandas as pd
import pytest

import tewatch.client.dataframes as client_module
from tests.conftest import free_port
from tewatch.client import Client, ClientError, frames

DTYPES = {
    "int": "Int64",
    "float": "float64",
    "str": "string",
    "cat": "category",
    "time": "datetime64[ns, UTC]",
    "bool": "boolean",
    "json": "string",
}


def assert_typed(frame: pd.DataFrame, spec: frames.Spec) -> None:
    assert list(frame.columns[: len(spec)]) == [name for name, _ in spec]
    for name, kind in spec:
        assert str(frame[name].dtype) == DTYPES[kind], (name, frame[name].dtype)


class CountingTransport(httpx.HTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[httpx.URL] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request.url)
        return super().handle_request(request)

    def paths(self, path: str) -> list[dict[str, str]]:
        return [dict(url.params) for url in self.requests if url.path == path]


@pytest.fixture(scope="module")
def tw(history):
    with Client(history.url) as client:
        yield client


def test_runs(tw, history):
    runs = tw.runs()
    assert_typed(runs, frames.RUNS)
    assert list(runs["run_id"]) == [history.pr_run, *reversed(history.main_runs)]  # newest first
    main = runs[runs["branch"] == "main"]
    assert set(main["te_version"]) == {"2.20.2"} and set(main["commit_sha"]) == {history.merge_base}
    assert set(main["machine"]) == {"vm-h200", "h200x2"} and set(main["gpu_model"]) == {"NVIDIA H200"}
    full = main[main["profile"] == "full"].iloc[-1]  # h200-full: 226 cases (README)
    assert (
        full["verdicts_pass"]
        + full["verdicts_error"]
        + full["verdicts_fail_accuracy"]
        + full["verdicts_unsupported"]
        == 226
    )
    pr = runs.iloc[0]
    assert (pr["pr_number"], pr["merge_base_sha"], pr["branch"]) == (1, history.merge_base, "pr-1")
    assert runs["started_at"].notna().all() and (runs["finished_at"] > runs["started_at"]).all()
    assert list(tw.runs(machine="h200x2")["run_id"]) == list(reversed(history.main_runs[2:]))
    assert tw.runs(pr=1)["run_id"].tolist() == [history.pr_run]
    # a time range on the start: the run that started first alone, with a datetime or ISO text
    first = runs.sort_values("started_at").iloc[0]
    early = tw.runs(until=first["started_at"] + pd.Timedelta(seconds=1))
    assert early["run_id"].tolist() == [first["run_id"]]
    assert tw.runs(
        since=first["started_at"].isoformat(), until=first["started_at"] + pd.Timedelta(seconds=1)
    )["run_id"].tolist() == [first["run_id"]]


def test_series_catalog(tw):
    series = tw.series()
    assert_typed(series, frames.SERIES)
    assert series["series_id"].is_unique
    linear = tw.series(case="linear.LinearFwdBwd", gpu="NVIDIA H200")
    assert set(linear["case_name"]) == {"linear.LinearFwdBwd"} and linear["case_id"].nunique() == 90
    assert set(linear["benchmark"]) >= {"linear.LinearFwdBwd.track_seconds"}
    assert set(linear["mode"]) == {"eager", "default", "reduce-overhead", "max-autotune"}
    assert set(linear["rank"]) == {2, 3, 4}


def test_samples_of_series_and_of_runs_agree(tw, history):
    linear = tw.series(case="linear.LinearFwdBwd", recipe="bf16")
    by_series = tw.samples(linear["series_id"], branch="main")
    assert_typed(by_series, frames.SAMPLES)
    by_run = tw.samples(runs=tw.runs(branch="main"))
    assert_typed(by_run, frames.SAMPLES)
    by_run = by_run[by_run["series_id"].isin(linear["series_id"])]
    key = ["series_id", "run_id", "sample_index"]
    left = by_series.sort_values(key).reset_index(drop=True)
    right = by_run.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(left, right, check_categorical=False)
    timed = left.dropna(subset=["sample"])
    assert len(timed) > 500 and (timed["sample"] > 0).all() and (timed["unit"] == "seconds").all()
    assert set(timed["te_version"]) == {"2.20.2"} and set(timed["verdict"]) == {"pass"}
    # the case's GPU state, read by NVML around it on the H200
    assert timed["sm_clock_mhz_min"].between(500, 2000).all() and (timed["power_w_max"] > 50).all()
    assert timed["throttle_reasons"].notna().all()
    # samples in recorded order, and the result's own value (asv's median) beside each
    one = timed[(timed["run_id"] == history.main_runs[0])].groupby("series_id")
    assert all(list(group["sample_index"]) == list(range(len(group))) for _, group in one)
    assert all(
        group["value"].iloc[0] == pytest.approx(group["sample"].median(), rel=0.05) for _, group in one
    )


def test_failures_keep_a_row_without_samples(tw):
    series = tw.series(case="linear.LinearFwdBwd", recipe="nvfp4-ref")
    rank4 = series[(series["rank"] == 4) & (series["mode"] == "eager")]["series_id"]
    rows = tw.samples(rank4, branch="main")
    assert len(rows) >= 1 and set(rows["verdict"]) == {"error"} and set(rows["status"]) == {"failed"}
    assert rows["sample"].isna().all() and rows["sample_index"].isna().all()
    unsupported = tw.samples(
        tw.series(case="linear.LinearFwdBwd", recipe="nvfp4")["series_id"][:3], branch="main"
    )
    assert set(unsupported["verdict"]) == {"unsupported"} and unsupported["sample"].isna().all()


def test_latest_verdicts_with_labels(tw):
    verdicts = tw.verdicts(branch="main")
    assert_typed(verdicts, frames.VERDICTS)
    assert verdicts["case_id"].is_unique
    counts = verdicts["status"].value_counts()
    assert counts["pass"] > 100 and counts["error"] >= 9 and counts["unsupported"] > 40
    # TE 2.20.2's NVFP4 shape contract at 3D/4D and the CPU round trip's RecursionError (README)
    contract = verdicts[
        (verdicts["case_name"] == "contracts.ShapeContract") & (verdicts["status"] == "error")
    ]
    assert {"nvfp4"} <= set(contract["recipe"]) and {3, 4} <= set(contract["rank"])
    assert "RecursionError" in set(verdicts["exception_class"].dropna())
    distributed = verdicts[verdicts["case_name"] == "distributed.LinearTensorParallel"]
    assert set(distributed["world_size"]) == {1, 2}
    assert tw.verdicts(branch="main", status="error")["status"].eq("error").all()


def test_pull_request_comparisons_with_labels(tw, history):
    comparisons = tw.comparisons(1)
    assert_typed(comparisons, frames.COMPARISONS)
    assert len(comparisons) > 50 and set(comparisons["head_run_id"]) == {history.pr_run}
    assert comparisons["benchmark"].notna().all() and comparisons["case_name"].notna().all()
    regressions = comparisons[comparisons["verdict"] == "regression"]
    # the doubled reference quantize: te-ref quantize cases slower by about +100 % (campaign README)
    quantize = regressions[
        (regressions["case_name"] == "quantize.Quantize") & (regressions["backend"] == "te-ref")
    ]
    assert len(quantize) >= 5 and quantize["effect"].between(0.5, 1.5).all()
    assert (quantize["ci_low"] > 0).all()
    with pytest.raises(ClientError, match=r"^pull request 999 has no run stored at http://127\.0\.0\.1:\d+$"):
        tw.comparisons(999)


def test_change_points_with_labels_and_commits(tw, history):
    active = tw.change_points(branch="main")
    everything = tw.change_points(active=None)
    assert_typed(everything, frames.CHANGE_POINTS)
    assert len(active) == 1 and len(everything) == 2
    [point] = active.to_dict("records")
    assert point["series_id"] == history.change_point_series
    assert (point["case_name"], point["recipe"], point["rank"], point["mode"]) == (
        "linear.LinearFwdBwd",
        "bf16",
        3,
        "default",
    )
    assert point["commit_sha"] == point["before_commit_sha"] == history.merge_base
    assert point["committed_at"].tzinfo is not None and point["direction"] == "regression"
    ratio = everything[everything["series_id"].isna()].iloc[0]
    assert pd.isna(ratio["case_name"]) and bool(ratio["environment_shift"]) and not bool(ratio["active"])
    assert ratio["environment_changes"] == '{"torch": ["2.10.0", "2.11.0"]}'


def test_alerts_with_labels(tw, history):
    alerts = tw.alerts()
    assert_typed(alerts, frames.ALERTS)
    assert alerts["alert_id"].is_unique
    correctness = alerts[(alerts["kind"] == "correctness") & (alerts["branch"] == "main")]
    assert len(correctness) >= 11 and correctness["case_name"].notna().all()
    regressions = tw.alerts(kind="regression", pr=1)
    assert len(regressions) >= 5 and regressions["benchmark"].notna().all()
    assert set(regressions["backend"]) >= {"te-ref"} and regressions["effect"].notna().all()
    assert (alerts["updated_at"] >= alerts["created_at"]).all()


def test_every_paged_route_is_read_to_its_end(history, monkeypatch):
    """Pages of 2 runs, 5 results, 7 cases, 3 alerts and 1 change point give the same frames as one page."""
    with Client(history.url) as whole:
        expected = {
            "runs": whole.runs(),
            "series": whole.series(),
            "alerts": whole.alerts(),
            "change_points": whole.change_points(active=None),
            "samples": whole.samples(runs=[history.main_runs[2]]),
        }
    for name, size in [("PAGE", 2), ("CASE_PAGE", 7), ("ALERT_PAGE", 3), ("CHANGE_POINT_PAGE", 1)]:
        monkeypatch.setattr(client_module, name, size)
    transport = CountingTransport()
    with Client(history.url, transport=transport) as paged:
        got = {
            "runs": paged.runs(),
            "series": paged.series(),
            "alerts": paged.alerts(),
            "change_points": paged.change_points(active=None),
        }
        monkeypatch.setattr(client_module, "PAGE", 5)
        got["samples"] = paged.samples(runs=[history.main_runs[2]])
    for name, frame in expected.items():
        pd.testing.assert_frame_equal(got[name], frame, check_categorical=False, obj=name)
    assert len(transport.paths("/api/v1/runs")) == 3  # 5 runs
    assert len(transport.paths("/api/v1/alerts")) == len(expected["alerts"]) // 3 + 1
    # one active change point, then an empty page; one withdrawn, then an empty page
    assert [p["active"] for p in transport.paths("/api/v1/detections")] == ["true", "true", "false", "false"]
    results = transport.paths(f"/api/v1/runs/{history.main_runs[2]}/results")
    assert [int(p["offset"]) for p in results] == list(range(0, 20, 5))  # 20 results of the 2-GPU run


def test_an_unreachable_server_and_a_refusal_are_one_sentence(history):
    with Client(f"http://127.0.0.1:{free_port()}") as nowhere, pytest.raises(ClientError) as unreachable:
        nowhere.runs()
    assert re.fullmatch(
        r"cannot reach tewatch at http://127\.0\.0\.1:\d+: ConnectError: .+", str(unreachable.value)
    )
    assert unreachable.value.__cause__ is None and unreachable.value.__suppress_context__
    with Client(history.url) as tw:
        with pytest.raises(ClientError, match=r"^GET /api/v1/runs answered HTTP 422: since: Input should be"):
            tw.runs(since="yesterday")
        with pytest.raises(
            ClientError, match=r"^GET /api/v1/series/999999 answered HTTP 404: no series 999999$"
        ):
            tw.samples(999999)
        with pytest.raises(ClientError, match="HTTP 422: pr_number: Input should be less than or equal to"):
            tw.comparisons(2**40)
        with pytest.raises(ClientError, match=r"not JSON: is http://127\.0\.0\.1:\d+ a tewatch service\?"):
            tw._http.get("/")
        with pytest.raises(ValueError, match="either series ids or runs"):
            tw.samples()


def test_pandas_stays_out_of_the_service(tmp_path):
    """The service, its CLI and the dashboards, imported and serving a request, load neither pandas nor
    pyarrow (that no module but the client imports them is lint-imports' contract, pyproject.toml)."""
    code = (
        "import sys\n"
        "from fastapi.testclient import TestClient\n"
        "import tewatch.cli, tewatch.pipeline.detection, tewatch_dashboards.router\n"
        "from tewatch.api.app import create_app\n"
        "from tewatch.core.settings import Settings\n"
        "from tewatch.store.engine.migrate import upgrade\n"
        "url = f'sqlite:///{sys.argv[1]}'\n"
        "upgrade(url)\n"
        "with TestClient(create_app(Settings(database_url=url))) as client:\n"
        "    assert client.get('/api/v1/runs').status_code == 200 and client.get('/').status_code == 200\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'pyarrow'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code, str(tmp_path / "store.sqlite3")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_full_profile_s_compile_ratios_are_those_docs_analysis_quotes(tw):
    """docs/analysis.md's paragraph on the full profile: its example's arithmetic, mode by mode, on the
    history these tests serve (the full and quick profiles of TE 2.20.2 on an H200)."""
    series = tw.series(case="linear.LinearFwdBwd", gpu="NVIDIA H200")
    timing = series[series["benchmark"] == "linear.LinearFwdBwd.track_seconds"]
    samples = tw.samples(timing["series_id"], branch="main").dropna(subset=["sample"])
    per_run = (
        samples.groupby(["run_id", "recipe", "rank", "mode"], observed=True)["sample"]
        .median()
        .unstack("mode")
    )
    ratio = (
        per_run.drop(columns="eager")
        .div(per_run["eager"], axis=0)
        .groupby(["recipe", "rank"], observed=True)
        .median()
        .round(2)
    )
    assert set(ratio.columns) == {"default", "reduce-overhead", "max-autotune"}
    bf16 = ratio.loc["bf16"].to_numpy(float)
    assert (bf16.min(), bf16.max()) == (0.94, 1.05)  # "0.94 to 1.05 in every mode and rank"
    assert sorted(ratio.loc["fp8-block", "default"]) == [1.17, 1.22, 1.22]  # "17 to 22 % slower"
    assert set(ratio.loc["torch-ref", "default"]) == {0.86}  # "14 % faster"
    assert set(ratio.loc["nvfp4-ref"].to_numpy(float).ravel()) <= {0.99, 1.0}
    others = ratio.drop(index=["bf16", "torch-ref", "nvfp4-ref"], level="recipe").copy()
    others.loc["fp8-block", "default"] = float("nan")
    assert (others - 1).abs().max().max() == pytest.approx(0.25, abs=0.005)  # "up to 25 % either way"
