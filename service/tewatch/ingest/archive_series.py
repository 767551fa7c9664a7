"""Benchmarks' histories read straight from a tar archive of asv results, without a store: one value per
commit (the median of its runs, as detection takes it), commits in the order the store gives them
without a commit graph (the results file's date, asv's author date, then the commit hash)."""

from __future__ import annotations

import tarfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tewatch.ingest.asv_files import parse_results


@dataclass(frozen=True)
class ArchiveSeries:
    benchmark: str
    env_name: str
    commits: list[str]
    values: np.ndarray  # NaN where every run of the commit failed or skipped it


def archive_series(archive: Path, env_name: str, benchmarks: list[str]) -> dict[str, ArchiveSeries]:
    """The histories of `benchmarks` (asv names, unparametrized) in one asv environment of the archive."""
    runs: dict[str, dict[tuple[int, str], list[float]]] = {name: defaultdict(list) for name in benchmarks}
    with tarfile.open(archive) as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(f"-{env_name}.json"):
                continue
            file = tar.extractfile(member)
            assert file is not None  # a regular file's member
            results = parse_results(file.read(), member.name)
            if results.env_name != env_name:
                continue
            key = (results.date_ms or 0, results.commit_hash)
            for benchmark in results.benchmarks:
                if benchmark.name in runs:
                    value = benchmark.combos[0].value if benchmark.combos else None
                    runs[benchmark.name][key].append(np.nan if value is None else float(value))
    found = {}
    for name, by_commit in runs.items():
        order = sorted(by_commit)
        values = [
            np.nanmedian(by_commit[key]) if np.isfinite(by_commit[key]).any() else np.nan for key in order
        ]
        found[name] = ArchiveSeries(
            name, env_name, [sha for _, sha in order], np.asarray(values, dtype=float)
        )
    return found
