"""The Jinja2 environment of the pages (autoescaped) and the filters that format values for people."""

from __future__ import annotations

import hashlib
import math
import re
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from urllib.parse import urlencode

from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from tewatch.core.te_releases import is_version_stand_in
from tewatch_dashboards.status import css_class

TEMPLATE_DIR = Path(__file__).parent / "templates"
STATIC_DIR = Path(__file__).parent / "static"
STATIC_PREFIX = "/static"


def format_value(value: float | None, unit: str = "seconds") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if unit == "seconds":
        rounded = float(f"{value:.3g}")  # 999.6 us is shown as 1 ms, not 1e+03 us
        for scale, suffix in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
            if abs(rounded) >= scale or scale == 1e-9:
                return f"{value / scale:.3g} {suffix}"
    if unit == "fraction":
        return f"{value * 100:.1f} %"
    return f"{value:.4g} {unit}"


def format_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def format_effect(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.1f} %"


NOISE_SOURCE_WORDS = {  # tewatch.detect.compare.NoiseSource
    "rounds": "from the spread of the A/B rounds, with the benchmark's other series",
    "host": "the floor of host-bound calls",
    "history": "from the series' history",
    "samples": "from the runs' own samples",
    "benchmark": "from the spread of the benchmark's cases in this comparison",
    "floor": "the assumed floor",
}


def describe_noise_source(source: str | None) -> str:
    return NOISE_SOURCE_WORDS.get(source or "", "")


def format_time(value: datetime | None) -> str:
    if value is None:
        return "—"
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


# where a long identifier may wrap: before a capital that starts a word (ShapeContract|Mismatch, HTTP|Error,
# NVFP4|Tensor) and after a dot or an underscore (torch.|_dynamo.|exc)
_WRAP_POINT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[._])(?=[^._])")


def breakable(name: str | None) -> Markup:
    """`name` escaped, with <wbr> where it may wrap (camel-case words, dots, underscores), so that a narrow
    box wraps an exception class between its words, never inside one (CSS breaks nothing else)."""
    return Markup("<wbr>").join(escape(part) for part in _WRAP_POINT.split(name or ""))


def short_sha(sha: str | None) -> str:
    return (sha or "")[:10]


def commit_text(sha: str | None, te_version: str | None = None) -> str:
    """A commit as people know it: "2.19.0 · b447576" where the run recorded TE's version, "TE 2.20.2
    (no commit)" for a version's stand-in, else the short sha."""
    if is_version_stand_in(sha, te_version):
        return f"TE {te_version} (no commit)"
    return f"{te_version} · {(sha or '')[:7]}" if te_version else short_sha(sha)


def query_string(params: dict, **changes: object) -> str:
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")})


@cache
def static_url(path: str) -> str:
    """A URL under /static that changes with the file's content, so browsers may cache it for long."""
    file = STATIC_DIR / path
    version = hashlib.sha256(file.read_bytes()).hexdigest()[:12] if file.is_file() else "missing"
    return f"{STATIC_PREFIX}/{path}?v={version}"


def make_templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(TEMPLATE_DIR))
    env = templates.env
    env.autoescape = True
    env.trim_blocks = True
    env.lstrip_blocks = True
    env.filters.update(
        value=format_value,
        ratio=format_ratio,
        effect=format_effect,
        when=format_time,
        sha=short_sha,
        commit_text=commit_text,
        status_class=css_class,
        noise_source=describe_noise_source,
        breakable=breakable,
    )
    env.globals.update(query_string=query_string, static=static_url, is_version_stand_in=is_version_stand_in)
    return templates


templates = make_templates()
