"""The `tewatch` command. Each subcommand lives in its own module and registers itself on `app`."""

import importlib

from tewatch.cli.app import app

COMMAND_MODULES = [
    "serve",
    "db",
    "token",
    "upload",
    "commits",
    "export",
    "run",
    "detect",
    "webhooks",
    "campaign",
    "bisect",
    "backfill",
]

for _name in COMMAND_MODULES:
    importlib.import_module(f"tewatch.cli.{_name}")


def main() -> None:
    app()
