"""The Jinja2 environment of the pages (autoescaped) and the filters that format values for people."""

from __future__ import annotations

import hashlib
import math
import re
from datetime import datetime
from functools import cache
from pathlib import Path
from urllib.parse import urlencode

from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape

from tewatch.core.clock import as_utc
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
    if unit in BYTE_UNITS:
        return format_bytes(value, unit)
    if unit == "fraction":
        return f"{value * 100:.1f} %"
    return f"{value:.4g} {unit}"


# binary prefixes, as torch's allocator and TE's users count memory
BYTE_STEPS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))
BYTE_UNITS = {"bytes": "", "bytes/step": "/step"}


def byte_step(value: float) -> tuple[int, str]:
    """The smallest binary prefix a byte count reads in below 1000 at three digits: 1000 MiB reads as
    0.977 GiB and 1023.9 MiB as 1 GiB, never as 1e+03 MiB."""
    for scale, name in reversed(BYTE_STEPS):
        if abs(float(f"{value / scale:.3g}")) < 1000:
            return scale, name
    return BYTE_STEPS[0]


def format_bytes(value: float, unit: str = "bytes") -> str:
    """`834669056` bytes as `796 MiB`, `1048576` bytes/step as `1 MiB/step`."""
    scale, name = byte_step(value)
    return f"{value / scale:.3g} {name}{BYTE_UNITS.get(unit, '')}"


def format_byte_change(change: float | None, share: float | None, unit: str = "bytes") -> str:
    """A change of bytes with its sign and, where the value before was not 0, its share: `+64 MiB (+44.1
    %)`; `0 B` where nothing changed."""
    if change is None or not math.isfinite(change):
        return "—"
    if change == 0:
        return format_bytes(0.0, unit)
    text = ("+" if change > 0 else "-") + format_bytes(abs(change), unit)
    return f"{text} ({format_effect(share)})" if share is not None else text


def format_error(value: float | None, unit: str = "rel error") -> str:
    """An error value as its table shows it, its unit in the column's head: `0.03752`, `27.4 dB`."""
    if value is None or not math.isfinite(value):
        return "—"
    return f"{value:.3g} dB" if unit == "dB" else f"{value:.4g}"


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
    return as_utc(value).strftime("%Y-%m-%d %H:%M UTC")


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
        byte_change=format_byte_change,
        error_value=format_error,
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
