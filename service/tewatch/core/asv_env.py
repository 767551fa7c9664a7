"""The name asv gives an environment and the results files it files under it, in one place for the runner
(which files results) and ingest (which reads them), as asv 0.6 names them."""

from __future__ import annotations

import re

EXISTING = "existing"  # asv's environment type for the interpreter a runner has installed
_NTFS_RESERVED = {
    "CON",
    "PRN",
    "AUX",
    "NUL",
    *(f"COM{i}" for i in range(1, 10)),
    *(f"LPT{i}" for i in range(1, 10)),
}


def sanitize_filename(name: str) -> str:
    """asv.util.sanitize_filename."""
    name = re.sub('[<>:"/\\^|?*\x00-\x1f]', "_", name)
    return name + "_" if name.upper() in _NTFS_RESERVED else name


def env_name_without_tool(python: str, requirements: dict[str, object]) -> str:
    """asv's name of an environment without a tool name (`get_env_name("", python, requirements, {})`),
    which results files written before asv stored `env_name` are filed under."""
    name = [f"py{python}"]
    for key, value in sorted(requirements.items()):
        name.append(f"{key}{value}" if value else key)
    return sanitize_filename("-".join(name))


def is_existing(env_name: str) -> bool:
    """asv's `existing` environment, whose name is only the interpreter's path."""
    return env_name == EXISTING or env_name.startswith(f"{EXISTING}-")


def results_suffix(env_name: str | None) -> str:
    """How the name of a results file of `env_name` ends (of any environment: None)."""
    return f"-{env_name}.json" if env_name else ".json"


def results_file_name(sha: str, env_name: str) -> str:
    """asv's name of the results file of commit `sha` in environment `env_name`."""
    return f"{sha[:8]}{results_suffix(env_name)}"
