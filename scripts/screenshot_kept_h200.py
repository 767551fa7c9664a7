"""Screenshots of the kept H200 campaigns of 3 December (tests/fixtures/h200-training-ab, h200-kernels-ab) on
a real `tewatch serve`, with Playwright and Debian's Chromium: uploads to a fresh SQLite store the training
A/A arm and base on main (two runs of identical code: a band of 0), the training head as pull request 1,
the kernel base on main and its head (a host sync per call and a kernel split) as pull request 3, then shoots

- `training-overlay.png`: te bf16 eager of pull request 1 over the base, parting at step 22;
- `pr-3-kernels.png`: the Kernels section of pull request 3, its first 1500 px;
- `case-kernels.png`: the kernel table of eager te.Linear fp8-current in pull request 3's head.

    .venv/bin/python scripts/screenshot_kept_h200.py docs/screenshots/h200-1203
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from tewatch.campaign.service_process import ServiceProcess
from tewatch.client.api import ApiClient
from tewatch.client.retries import RetryPolicy
from tewatch.ingest.discover import find_runs
from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import TokenScope
from tewatch.store.writes.tokens import create_token

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
TRAINING, KERNELS = FIXTURES / "h200-training-ab", FIXTURES / "h200-kernels-ab"
BASE_SHA = "f7d8c16d14e12838378ca44617af2072e71c8508"  # both campaigns' base
UPLOADS = [  # (name, results folder, pull request or None)
    ("training A/A", TRAINING / "aa-results", None),
    ("training base", TRAINING / "base-results", None),
    ("kernels base", KERNELS / "base-results", None),
    ("training head", TRAINING / "head-results", 1),
    ("kernels head", KERNELS / "head-results", 3),
]
WIDTH = 1400
MAX_HEIGHT = 1500  # px of the Kernels section kept: its first rows


def upload_all(client: ApiClient) -> dict[str, int]:
    """Run ids by name, uploaded in UPLOADS' order."""
    ids = {}
    for name, folder, pr in UPLOADS:
        (run,) = find_runs(folder)
        fields = {"branch": "main"} if pr is None else {"pr_number": str(pr), "merge_base_sha": BASE_SHA}
        sent = client.upload(run.parts(), fields, RetryPolicy(), detect=True)
        if sent.stored is None:
            raise RuntimeError(f"{name}: {sent.error}")
        ids[name] = int(sent.stored["run_id"])
    return ids


def case_id(client: ApiClient, case: str, params: dict[str, object]) -> int:
    items = client.get("/api/v1/cases", params={"case": case})["items"]
    (found,) = [c["id"] for c in items if c["params"] == params]
    return int(found)


def wait_for(page: Page, url: str, selector: str, seconds: float = 120) -> None:
    """Load `url` until `selector` is on it (pull-request detection runs after the upload's answer)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        page.goto(url, wait_until="networkidle")
        if page.query_selector(selector):
            return
        time.sleep(1)
    raise RuntimeError(f"{url}: no {selector} within {seconds:.0f} s")


def to_palette(file: Path, colors: int = 128) -> None:
    """Rewrite a screenshot with a palette (pages are flat colour: a third of the size)."""
    from PIL import Image

    with Image.open(file) as image:
        flat = image.convert("RGB").quantize(
            colors=colors, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
        )
    flat.save(file, optimize=True)


def shoot(url: str, client: ApiClient, ids: dict[str, int], out: Path) -> list[Path]:
    bf16 = case_id(client, "training.TrainSteps", {"backend": "te", "execution": "eager", "recipe": "bf16"})
    linear = case_id(client, "linear.LinearFwdBwd", {"mode": "eager", "rank": 2, "recipe": "fp8-current"})
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", headless=True)
        page = browser.new_page(viewport={"width": WIDTH, "height": 900})
        wait_for(page, f"{url}/case/{bf16}?run={ids['training head']}", "#training img")
        page.wait_for_function("document.querySelector('#training img').complete")
        written.append(out / "training-overlay.png")
        page.locator("#training").screenshot(path=str(written[-1]))
        wait_for(page, f"{url}/pr/3", "#pr-kernels tbody tr td")
        written.append(out / "pr-3-kernels.png")
        section = page.locator("div.table-wrap", has=page.locator("#pr-kernels")).bounding_box()
        assert section is not None
        clip = {**section, "height": min(section["height"], MAX_HEIGHT)}
        page.screenshot(path=str(written[-1]), full_page=True, clip=clip)  # type: ignore[arg-type]
        wait_for(page, f"{url}/case/{linear}?run={ids['kernels head']}", "#kernel-table tbody tr")
        written.append(out / "case-kernels.png")
        page.locator("#kernels").screenshot(path=str(written[-1]))
        browser.close()
    for file in written:
        to_palette(file)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the PNG files")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        database_url = f"sqlite:///{Path(tmp) / 'kept.sqlite3'}"
        with ServiceProcess(database_url, Path(tmp) / "service.log") as service:
            engine = make_engine(database_url)
            token = create_token(engine, "screenshots", TokenScope.upload)
            engine.dispose()
            with ApiClient(service.url, token) as client:
                ids = upload_all(client)
                for file in shoot(service.url, client, ids, args.out):
                    print(file, f"{file.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
