"""`python -m tewatch.runner`: `tewatch run` on a GPU runner that lacks the service's dependencies."""

import typer

from tewatch.runner.command import run

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command()(run)

if __name__ == "__main__":
    app()
