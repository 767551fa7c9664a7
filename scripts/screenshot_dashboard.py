"""Full-page screenshots of the dashboard over a stored SQLite database.

Copies the database into a temp folder (the original is never touched), starts a real `tewatch serve` on it,
and photographs with Playwright and Debian's Chromium (headless): the overview, the matrix, PR #1, the alerts,
the runs, the machines, the series of the largest open regression alert (with its pull request's samples
where it is a pull request's) and the te-ref quantize series that changed most in PR #1, where that is
another series (PR #1 and the alert's series where the store has them), the series that changed most
from the oldest commit on main to the next (the comparer's largest regression or improvement), and where
the store holds TE releases, the releases view and the page of the newest run on main of a release.

    .venv/bin/python scripts/screenshot_dashboard.py campaign-out/campaign.sqlite3 docs/screenshots/h200-campaign
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

from tewatch.campaign.service_process import ServiceProcess

PAGES = {
    "overview": "/",
    "matrix": "/matrix",
    "pr-1": "/pr/1",
    "alerts": "/alerts",
    "runs": "/runs",
    "machines": "/machines",
    "docs": "/docs",
}


def copy_database(source: str, folder: Path) -> str:
    """A copy of the SQLite file (and its -wal/-shm companions) in `folder`, as a database URL."""
    path = Path(source.removeprefix("sqlite:///"))
    copy = folder / path.name
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{path}{suffix}").exists():
            shutil.copy2(f"{path}{suffix}", f"{copy}{suffix}")
    return f"sqlite:///{copy}"


def pages(url: str) -> dict[str, str]:
    """The pages above (PR #1 where the store has it); the series of the open regression alert with the
    largest effect, where there is one; and the te-ref quantize series that changed most in PR #1 (the
    first one when no PR compared it)."""
    found = dict(PAGES)
    if not httpx.get(f"{url}/api/v1/runs", params={"pr": 1}).json()["items"]:
        del found["pr-1"]
    effects = {
        row["series_id"]: abs(row["effect"] or 0)
        for row in httpx.get(f"{url}/api/v1/prs/1/comparisons").json()
    }
    alerts = httpx.get(f"{url}/api/v1/alerts", params={"status": "open", "kind": "regression"}).json()
    worst_series = None
    if alerts:
        worst = max(alerts, key=lambda alert: abs(alert["effect"] or 0))
        worst_series = worst["series_id"]
        pr = f"?pr={worst['pr_number']}" if worst["pr_number"] else ""
        found["series-top-regression"] = f"/series/{worst_series}{pr}"
    cases = httpx.get(f"{url}/api/v1/cases", params={"case": "quantize.Quantize", "backend": "te-ref"}).json()
    te_ref = [ref["id"] for case in cases["items"] for ref in case["series"]]
    if te_ref and (most_changed := max(te_ref, key=lambda i: effects.get(i, -1))) != worst_series:
        found["series-te-ref-quantize"] = f"/series/{most_changed}"
    if (stepped := largest_first_step(url)) is not None:
        found["series-first-step"] = f"/series/{stepped}"
    if 'class="release-step"' in httpx.get(f"{url}/releases").text:
        found["releases"] = "/releases"
    if (run_id := newest_release_run(url)) is not None:
        found["run-newest-release"] = f"/runs/{run_id}"
    return found


def newest_release_run(url: str) -> int | None:
    """The run on main of the newest commit that recorded TE's version."""
    runs = httpx.get(f"{url}/api/v1/runs", params={"branch": "main", "limit": 500}).json()["items"]
    measured = [run for run in runs if run["te_version"]]
    newest = max(measured, key=lambda run: (run["committed_at"] or "", run["id"]), default=None)
    return newest["id"] if newest else None


def largest_first_step(url: str) -> int | None:
    """The series the comparer saw change most between the oldest two commits on main (one machine)."""
    runs = httpx.get(f"{url}/api/v1/runs", params={"branch": "main", "limit": 500}).json()["items"]
    runs.sort(key=lambda run: (run["committed_at"] or "", run["id"]))
    if not runs:
        return None
    first = runs[0]
    later = [
        r for r in runs if r["commit_sha"] != first["commit_sha"] and r["machine_id"] == first["machine_id"]
    ]
    if not later:
        return None
    rows = httpx.get(f"{url}/api/v1/compare", params={"base": first["id"], "head": later[0]["id"]}).json()[
        "rows"
    ]
    changed = [row for row in rows if row["verdict"] in ("regression", "improvement")]
    return max(changed, key=lambda row: abs(row["effect"]))["series_id"] if changed else None


def to_palette(file: Path, colors: int) -> None:
    """Rewrite a screenshot with a palette of `colors` (pages are flat colour: a third of the size)."""
    from PIL import Image

    with Image.open(file) as image:
        flat = image.convert("RGB").quantize(
            colors=colors, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
        )
    flat.save(file, optimize=True)


def screenshot(url: str, out: Path, max_height: int, scale: float, colors: int) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 900}, device_scale_factor=scale)
        for name, path in pages(url).items():
            response = page.goto(url + path, wait_until="networkidle")
            if response is None or not response.ok:
                raise RuntimeError(f"{path}: HTTP {response.status if response else '?'}")
            height = min(page.evaluate("document.documentElement.scrollHeight"), max_height)
            file = out / f"{name}.png"
            page.screenshot(path=file, full_page=True, clip={"x": 0, "y": 0, "width": 1400, "height": height})
            if colors:
                to_palette(file, colors)
            written.append(file)
        browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database", help="SQLite database URL (sqlite:///...) or path")
    parser.add_argument("out", type=Path, help="folder for the PNG files")
    parser.add_argument("--max-height", type=int, default=1600, help="clip pages taller than this (px)")
    parser.add_argument("--scale", type=float, default=1.0, help="device scale factor")
    parser.add_argument(
        "--colors", type=int, default=128, help="palette size of the PNGs; 0 keeps full colour"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        database_url = copy_database(args.database, Path(tmp))
        with ServiceProcess(database_url, Path(tmp) / "service.log") as service:
            for file in screenshot(service.url, args.out, args.max_height, args.scale, args.colors):
                print(file)


if __name__ == "__main__":
    main()
