"""`tewatch campaign` (the product end to end on a GPU runner) and `tewatch demo` (the quick start)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from tewatch.cli.app import app
from tewatch.cli.options import DatabaseOption, fail, settings_for


@app.command()
def campaign(
    out: Path = typer.Option(Path("campaign-out"), help="folder for the store, results, webhooks and pages"),
    profile: str = typer.Option("quick", help="suite profile of both runs: full | quick | ci"),
    backends: str | None = typer.Option(None, help="comma-separated subset of te,te-ref,torch-ref"),
    bench: str | None = typer.Option(None, help="regex of benchmarks to run (asv --bench)"),
    perturb: str = typer.Option("", help="perturbations of the head run (benchmarks/harness/perturb.py)"),
    base_results: Path | None = typer.Option(None, help="reuse these asv results as the base run"),
    base_commit: str | None = typer.Option(None, help="file the base run under this commit (default: TE's)"),
    head_results: Path | None = typer.Option(
        None, help="reuse these asv results as the head run (e.g. a kept campaign's, to compare it again)"
    ),
    pr: int = typer.Option(1, "--pr", help="pull request number the head run is filed under"),
    rounds: int = typer.Option(
        3,
        help="A/B rounds per side (base and head alternate, a fresh process per "
        "case and round); 1: one run each",
    ),
    aa: bool = typer.Option(
        False,
        "--aa",
        help="also measure the base's code as a third arm, uploaded as pull request PR+1 (an A/A)",
    ),
    aa_results: Path | None = typer.Option(
        None,
        help="upload these asv results, an A/A arm kept beside --base-results, as pull request PR+1 "
        "instead of measuring one (e.g. a kept campaign's third arm)",
    ),
    deadline: float | None = typer.Option(None, help="seconds: start no round that would end past this"),
    project: Path = typer.Option(Path("."), help="folder holding asv.conf.json and benchmarks/"),
    db: DatabaseOption = None,
) -> None:
    """Serve, run the suites on a base and a perturbed head state, upload the head as a pull request,
    detect, receive the signed webhooks and render the dashboard pages: everything lands in OUT."""
    from tewatch.campaign.pipeline import Campaign, CampaignOptions

    console = Console(stderr=True)
    opts = CampaignOptions(
        project=project.resolve(),
        out=out.resolve(),
        profile=profile,
        bench=bench,
        perturb=perturb,
        backends=tuple(b.strip() for b in backends.split(",") if b.strip()) if backends else None,
        pr_number=pr,
        base_results=base_results.resolve() if base_results else None,
        base_commit=base_commit,
        head_results=head_results.resolve() if head_results else None,
        database_url=db,
        rounds=rounds,
        aa=aa,
        aa_results=aa_results.resolve() if aa_results else None,
        deadline_s=deadline,
    )
    try:
        summary = Campaign(opts, lambda line: console.print(line, highlight=False)).run()
    except RuntimeError as exc:
        raise fail(str(exc)) from exc
    table = Table(title=f"campaign in {out} (perturbation: {perturb or 'none'})")
    table.add_column("what")
    table.add_column("value")
    for label, verdicts in sorted(summary.verdicts.items()):
        table.add_row(f"verdicts, {label} run", ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    kinds: dict[str, int] = {}
    for alert in summary.alerts:
        kinds[alert["kind"]] = kinds.get(alert["kind"], 0) + 1
    table.add_row("alerts", ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "none")
    table.add_row(
        "A/B rounds",
        f"{summary.rounds}: "
        + "; ".join(", ".join(f"{k} {v:.0f} s" for k, v in r.items()) for r in summary.round_seconds)
        if summary.round_seconds
        else "none (one run each)",
    )
    table.add_row(
        "pull request verdicts", ", ".join(f"{k} {v}" for k, v in sorted(summary.pr_verdicts.items()))
    )
    if summary.aa_pr_verdicts:
        table.add_row(
            "A/A verdicts", ", ".join(f"{k} {v}" for k, v in sorted(summary.aa_pr_verdicts.items()))
        )
        table.add_row("A/A cases flagged", str(len(summary.aa_flagged)))
    scored = summary.perturbations
    if scored.get("touched"):
        table.add_row(
            "perturbed cases",
            f"{scored['touched']} touched, {scored['regressions']} regressions, "
            f"{len(scored['flagged_untouched'])} untouched flagged",
        )
    table.add_row("webhooks received", ", ".join(f"{k} {v}" for k, v in sorted(summary.webhooks.items())))
    table.add_row("signatures valid", "yes" if summary.signatures_valid else "NO")
    table.add_row("pages rendered", ", ".join(summary.pages))
    table.add_row("wall time", ", ".join(f"{k} {v:.0f} s" for k, v in summary.seconds.items()))
    Console().print(table)


@app.command()
def demo(
    host: str = typer.Option("127.0.0.1", help="address to serve the dashboard on"),
    port: int = typer.Option(8000, help="port to serve the dashboard on"),
    run_suites: bool = typer.Option(
        True, "--run-suites/--no-run-suites", help="also run the CPU suites once"
    ),
    project: Path = typer.Option(Path("."), help="the tewatch checkout (bundled history, asv.conf.json)"),
    db: DatabaseOption = None,
) -> None:
    """Load the bundled real H200 results, run the CPU reference suites once, add them, detect, and
    serve the dashboard on HOST:PORT."""
    import uvicorn

    from tewatch.api.app import create_app
    from tewatch.campaign.demo import prepare_demo, where_to_look
    from tewatch.pipeline.branch_detection import detect_branch
    from tewatch.runner.suite import RunError
    from tewatch.store.engine.database import make_engine

    console = Console(stderr=True)
    settings = settings_for(db)
    settings.public_url = f"http://{host}:{port}"
    try:
        prepare_demo(
            project.resolve(),
            settings.database_url,
            run_suites,
            lambda line: console.print(line, highlight=False),
            settings.public_url,
        )
    except (FileNotFoundError, RunError) as exc:
        raise fail(str(exc)) from exc
    engine = make_engine(settings.database_url)
    summary = detect_branch(engine, "main", settings.public_url)
    engine.dispose()
    console.print(
        f"detection: {summary.series} series, {summary.change_points} change points", highlight=False
    )
    for line in where_to_look(settings.database_url, settings.public_url):
        console.print(line, highlight=False, soft_wrap=True)
    console.print(f"dashboard: {settings.public_url}/  (Ctrl+C stops it)", highlight=False)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning")
