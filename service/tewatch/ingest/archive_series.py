"""Benchmarks' histories read straight from a tar archive of asv results, without a store: one value per
commit (the median of its runs, as detection takes it), commits in the order the store gives them
without a commit graph (the results file's date, asv's author date, then the commit hash)."""

from __future__ import annotations

import tarfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tewatch.core.asv_env import results_suffix
from tewatch.ingest.asv_files import parse_results


@dataclass(frozen=True)
class ArchiveSeries:
    benchmark: str
    env_name: str
    commits: list[str]
    values: np.ndarray  # NaN where every run of the commit failed or skipped it
    dates_ms: list[int]  # each commit's results file date, the order's first key


def archive_series(
    archive: Path, env_name: str, benchmarks: list[str] | None = None
) -> dict[str, ArchiveSeries]:
    """The histories of `benchmarks` (asv names, unparametrized; None: every benchmark) in one asv
    environment of the archive."""
    return archive_environments(archive, env_name, benchmarks).get(env_name, {})


def archive_environments(
    archive: Path, env_name: str | None = None, benchmarks: list[str] | None = None
) -> dict[str, dict[str, ArchiveSeries]]:
    """{asv environment: {benchmark: its history}} in one read of the archive, of one environment or all."""
    runs: dict[tuple[str, str], dict[tuple[int, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    suffix = results_suffix(env_name)
    with tarfile.open(archive) as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(suffix):
                continue
            if member.name.endswith(("/machine.json", "/benchmarks.json")):
                continue
            file = tar.extractfile(member)
            assert file is not None  # a regular file's member
            results = parse_results(file.read(), member.name)
            if env_name is not None and results.env_name != env_name:
                continue
            key = (results.date_ms or 0, results.commit_hash)
            for benchmark in results.benchmarks:
                if benchmarks is None or benchmark.name in benchmarks:
                    value = benchmark.combos[0].value if benchmark.combos else None
                    runs[(results.env_name, benchmark.name)][key].append(
                        np.nan if value is None else float(value)
                    )
    found: dict[str, dict[str, ArchiveSeries]] = defaultdict(dict)
    for (env, name), by_commit in runs.items():
        order = sorted(by_commit)
        values = [
            np.nanmedian(by_commit[key]) if np.isfinite(by_commit[key]).any() else np.nan for key in order
        ]
        found[env][name] = ArchiveSeries(
            name, env, [sha for _, sha in order], np.asarray(values, dtype=float), [d for d, _ in order]
        )
    return dict(found)
