"""`tewatch run`: the asv suites against the installed Transformer Engine (see tewatch.runner)."""

from tewatch.cli.app import app
from tewatch.runner.command import run

app.command("run")(run)
