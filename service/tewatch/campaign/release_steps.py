"""What changed from one TE release to the next, as the demo prints it: each stored release step
(tewatch.pipeline.release_steps judged every release's runs against the release before) in a line, with
the largest change and where the releases view shows the rest."""

from __future__ import annotations

from sqlalchemy import Engine

from tewatch.store.reads.release_reads import ReleaseStep, release_steps


def step_summary(step: ReleaseStep, public_url: str) -> str:
    counts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(step.counts.items()))
    line = f"TE {step.base_version} -> {step.head_version} on {step.machine}: {counts or 'no series in both'}"
    if step.new_failures or step.fixes:
        line += f"; {len(step.new_failures)} cases began failing, {len(step.fixes)} pass again"
    changed = sorted(
        step.changed("regression") + step.changed("improvement"), key=lambda c: -abs(c.effect or 0.0)
    )
    if changed:
        largest = changed[0]
        line += f"; largest {largest.effect or 0.0:+.0%}: {largest.benchmark}, {public_url}/series/{largest.series_id}"
    return f"{line}\n    every step: {public_url}/releases"


def release_summaries(engine: Engine, public_url: str, branch: str = "main") -> list[str]:
    """A line per release step of `branch`, oldest first."""
    with engine.connect() as conn:
        steps = release_steps(conn, branch)
    return [step_summary(step, public_url) for step in reversed(steps)]
