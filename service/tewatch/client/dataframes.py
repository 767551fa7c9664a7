"""tewatch.client.Client: the history as pandas DataFrames, read through the API client (tewatch.client.api)."""

from __future__ import annotations

try:
    import pandas as pd
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError('tewatch.client needs pandas: pip install "tewatch[analysis]"') from exc

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from tewatch.client import frames
from tewatch.client.api import ApiClient, ClientError, Closing

PAGE = 1000  # runs, commits and a run's results per request (the most /runs allows)
CASE_PAGE = 10000
ALERT_PAGE = 1000
CHANGE_POINT_PAGE = 5000
SERIES_POINTS = 100_000  # the most runs /series/{id} answers


def _time(value: str | datetime | pd.Timestamp | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return pd.Timestamp(value).isoformat()


def _ids(values: int | Iterable[int] | pd.Series) -> list[int]:
    if isinstance(values, int):
        return [values]
    return [int(v) for v in dict.fromkeys(values) if not pd.isna(v)]


class Client(Closing):
    """A tewatch service at `url` (e.g. http://127.0.0.1:8000). `token` is needed only where the service
    requires one for reads (TEWATCH_READ_TOKEN_REQUIRED); `options` are ApiClient's (timeout, transport)."""

    def __init__(self, url: str, token: str | None = None, **options: Any) -> None:
        self._http = ApiClient(url, token, **options)
        self._catalog: tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]] | None = None

    @property
    def url(self) -> str:
        return self._http.url

    def close(self) -> None:
        self._http.close()

    # runs ---------------------------------------------------------------------------------------------

    def runs(
        self,
        *,
        branch: str | None = None,
        machine: str | None = None,
        gpu: str | None = None,
        pr: int | None = None,
        commit: str | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
    ) -> pd.DataFrame:
        """Runs, newest first, with their commit, machine, versions and counts by result and verdict status.
        `since` (inclusive) and `until` (exclusive) bound when a run started (ISO 8601 or datetime; UTC
        without a zone)."""
        params = {
            "branch": branch,
            "machine": machine,
            "gpu": gpu,
            "pr": pr,
            "commit": commit,
            "since": _time(since),
            "until": _time(until),
        }
        return frames.frame((self._run_row(run) for run in self._http.runs(params, PAGE)), frames.RUNS)

    @staticmethod
    def _run_row(run: Mapping[str, Any]) -> dict[str, Any]:
        """A run of /runs, or of /runs/{id} less its details (GPU state, machine, environment, files)."""
        details = ("id", "summary", "machine_name", "gpu_state", "machine", "environment", "files")
        row = {key: value for key, value in run.items() if key not in details}
        row["run_id"], row["machine"] = run["id"], run["machine_name"]
        summary = run.get("summary") or {}
        for status in frames.RESULT_STATUSES:
            row[f"results_{status}"] = (summary.get("results") or {}).get(status, 0)
        for status in frames.VERDICT_STATUSES:
            row[f"verdicts_{status}"] = (summary.get("verdicts") or {}).get(status, 0)
        return row

    # the catalog --------------------------------------------------------------------------------------

    def series(
        self,
        *,
        case: str | None = None,
        gpu: str | None = None,
        backend: str | None = None,
        recipe: str | None = None,
    ) -> pd.DataFrame:
        """Every series (one benchmark of one case on one asv machine) with its case's labels: the ids
        samples() takes."""
        params = {"case": case, "gpu": gpu, "backend": backend, "recipe": recipe}
        rows = [row for item in self._http.cases(params, CASE_PAGE) for row in _series_rows(item)]
        return frames.frame(rows, frames.SERIES)

    def _labels(self, series_ids: Iterable[Any], case_ids: Iterable[Any] = ()) -> tuple[dict, dict]:
        """Case labels by series id and by case id, read once (again when an id is new)."""
        wanted = {int(i) for i in series_ids if i is not None}, {int(i) for i in case_ids if i is not None}
        if self._catalog is None or not (
            wanted[0] <= self._catalog[0].keys() and wanted[1] <= self._catalog[1].keys()
        ):
            by_series: dict[int, dict[str, Any]] = {}
            by_case: dict[int, dict[str, Any]] = {}
            for item in self._http.cases({}, CASE_PAGE):
                by_case[item["id"]] = _case_labels(item)
                for row in _series_rows(item):
                    by_series[row["series_id"]] = {**_case_labels(item), "benchmark": row["benchmark"]}
            self._catalog = by_series, by_case
        return self._catalog

    # samples ------------------------------------------------------------------------------------------

    def samples(
        self,
        series: int | Iterable[int] | pd.Series | None = None,
        *,
        runs: pd.DataFrame | int | Iterable[int] | None = None,
        branch: str | None = None,
    ) -> pd.DataFrame:
        """One row per sample, with its series, run, commit, commit date, TE version, machine, the case's
        labels, the result's status and value (asv's median, or a metric's value), the case's verdict and
        GPU state (lowest clocks, highest power and temperature, throttle reasons around the case).

        Either `series` (ids, e.g. `tw.series(...)["series_id"]`: each series' history outside pull
        requests, or `branch`'s runs if given, its newest 100,000 runs at most) or `runs` (a runs()
        frame or run ids: every result of those runs). A result without samples (a metric, a failure,
        an unsupported case) is one row with `sample_index` and `sample` empty, so failures stay visible
        beside the timings."""
        if (series is None) == (runs is None):
            raise ValueError("samples() takes either series ids or runs, not both")
        if series is not None:
            rows = [row for series_id in _ids(series) for row in self._series_samples(series_id, branch)]
        else:
            rows = [row for run in self._runs_of(runs) for row in self._run_samples(run)]
        return frames.frame(rows, frames.SAMPLES)

    def _series_samples(self, series_id: int, branch: str | None) -> Iterable[dict[str, Any]]:
        answer = self._http.series_points(series_id, {"branch": branch}, SERIES_POINTS)
        labels = {
            **_case_labels(answer),
            "series_id": series_id,
            "benchmark": answer["benchmark"],
            "unit": answer["unit"],
        }
        for point in answer["points"]:
            base = {
                **labels,
                "run_id": point["run_id"],
                "commit_sha": point["commit_sha"],
                "committed_at": point["committed_at"],
                "te_version": point.get("te_version"),
                "machine": point.get("machine_name"),
                "branch": point["branch"],
                "pr_number": point["pr_number"],
                "status": point["status"],
                "verdict": point["verdict"],
                "value": point["value"],
                **frames.gpu_state_columns(point.get("gpu_state")),
            }
            yield from frames.sample_rows(base, point.get("samples"))

    def _runs_of(self, runs: pd.DataFrame | int | Iterable[int]) -> list[dict[str, Any]]:
        if isinstance(runs, pd.DataFrame):
            return runs.astype(object).where(runs.notna(), None).to_dict("records")
        return [self._run_row(self._http.run(run_id)) for run_id in _ids(runs)]

    def _run_samples(self, run: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
        context = {
            key: run.get(key)
            for key in (
                "run_id",
                "commit_sha",
                "committed_at",
                "te_version",
                "machine",
                "branch",
                "pr_number",
            )
        }
        if isinstance(context["committed_at"], pd.Timestamp):
            context["committed_at"] = context["committed_at"].isoformat()
        for result in self._http.run_results(int(run["run_id"]), PAGE):
            base = {
                **context,
                **_case_labels(result),
                "series_id": result["series_id"],
                "benchmark": result["benchmark"],
                "unit": result["unit"],
                "status": result["status"],
                "verdict": result["verdict"],
                "value": result["value"],
                **frames.gpu_state_columns(result.get("gpu_state")),
            }
            yield from frames.sample_rows(base, result.get("samples"))

    # verdicts, comparisons, change points, alerts --------------------------------------------------------

    def verdicts(
        self,
        *,
        branch: str | None = None,
        gpu: str | None = None,
        backend: str | None = None,
        recipe: str | None = None,
        case: str | None = None,
        status: str | None = None,
    ) -> pd.DataFrame:
        """The latest verdict of every case (on `branch` if given) with its labels: backend, recipe, mode,
        input rank, world size, and what failed (exception class, message, metric against tolerance)."""
        params = {
            "branch": branch,
            "gpu": gpu,
            "backend": backend,
            "recipe": recipe,
            "case": case,
            "status": status,
        }
        return frames.frame(self._http.latest_verdicts(params), frames.VERDICTS)

    def comparisons(self, pr: int) -> pd.DataFrame:
        """Every case of a pull request's runs against its merge base: verdict, effect and its interval,
        with the series' labels. A pull request with no stored run is a ClientError."""
        rows = self._http.pr_comparisons(pr)
        if not rows and next(iter(self._http.runs({"pr": int(pr)}, 1)), None) is None:
            raise ClientError(f"pull request {int(pr)} has no run stored at {self.url}")
        by_series, _ = self._labels(row["series_id"] for row in rows)
        return frames.frame(
            ({**by_series.get(row["series_id"], {}), **_renamed(row, id="comparison_id")} for row in rows),
            frames.COMPARISONS,
        )

    def change_points(
        self, *, branch: str | None = None, series_id: int | None = None, active: bool | None = True
    ) -> pd.DataFrame:
        """Change points (the detector's level changes) with the series' labels and the commits around them;
        `active=None` includes those later history withdrew."""
        params = {"branch": branch, "series_id": series_id}
        # the route reads active (its default) or withdrawn ones: both are two reads, newest first again
        rows = [
            row
            for state in ([active] if active is not None else [True, False])
            for row in self._http.change_points({**params, "active": str(state).lower()}, CHANGE_POINT_PAGE)
        ]
        rows.sort(key=lambda row: (row["created_at"], row["id"]), reverse=True)
        by_series, _ = self._labels(row["series_id"] for row in rows)
        commits = self._commits() if rows else {}
        out = []
        for row in rows:
            commit = commits.get(row["commit_id"], {})
            out.append(
                {
                    **by_series.get(row["series_id"], {}),
                    **_renamed(row, id="change_point_id"),
                    "commit_sha": commit.get("sha"),
                    "committed_at": commit.get("committed_at"),
                    "before_commit_sha": commits.get(row["before_commit_id"], {}).get("sha"),
                    "first_possible_commit_sha": commits.get(row["first_possible_commit_id"], {}).get("sha"),
                }
            )
            for key in ("commit_id", "before_commit_id", "first_possible_commit_id"):
                out[-1].pop(key, None)
        return frames.frame(out, frames.CHANGE_POINTS)

    def _commits(self) -> dict[int, dict[str, Any]]:
        return {commit["id"]: commit for commit in self._http.commits(PAGE)}

    def alerts(
        self,
        *,
        status: str | None = None,
        kind: str | None = None,
        branch: str | None = None,
        pr: int | None = None,
        gpu: str | None = None,
    ) -> pd.DataFrame:
        """Alerts, correctness first, then the newest, with the labels of their series or case."""
        params = {"status": status, "kind": kind, "branch": branch, "pr": pr, "gpu": gpu}
        rows = list(self._http.alerts(params, ALERT_PAGE))
        by_series, by_case = self._labels((r["series_id"] for r in rows), (r["case_id"] for r in rows))
        out = []
        for row in rows:
            labels = by_series.get(row["series_id"]) or by_case.get(row["case_id"]) or {}
            out.append({**labels, **_renamed(row, id="alert_id", detection_id="change_point_id")})
        return frames.frame(out, frames.ALERTS)


def _case_labels(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: item.get(name) for name, _ in frames.CASE_LABELS}


def _series_rows(case: Mapping[str, Any]) -> Iterable[dict[str, Any]]:
    for ref in case.get("series", []):
        yield {
            **_case_labels(case),
            "series_id": ref["id"],
            "benchmark": ref["benchmark"],
            "unit": ref["unit"],
            "case_id": case["id"],
            "machine": case.get("machine"),
            "params": case.get("params"),
            "labels": case.get("labels"),
        }


def _renamed(row: Mapping[str, Any], **names: str) -> dict[str, Any]:
    return {names.get(key, key): value for key, value in row.items()}
