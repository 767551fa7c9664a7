"""asv's names of environments and of their results files, as tewatch.core.asv_env builds them for the
runner and ingest alike, checked against asv 0.6.6's own functions."""

from __future__ import annotations

import pytest
from asv.environment import get_env_name
from asv.util import sanitize_filename as asv_sanitize_filename

from tewatch.core.asv_env import (
    env_name_without_tool,
    is_existing,
    results_file_name,
    results_suffix,
    sanitize_filename,
)


@pytest.mark.parametrize(
    ("python", "requirements"),
    [("3.11", {"numpy": "1.8", "six": "", "Cython": ""}), ("2.7", {}), ("3.12", {"a/b": "<2"})],
)
def test_the_name_without_a_tool_is_asvs(python, requirements) -> None:
    assert env_name_without_tool(python, requirements) == get_env_name("", python, requirements, {})


@pytest.mark.parametrize("name", ["CON", "lpt9", "a:b|c?*", "plain-name", "x\x01y"])
def test_file_names_are_sanitized_as_asv_does(name) -> None:
    assert sanitize_filename(name) == asv_sanitize_filename(name)


def test_the_existing_environment_and_results_file_names() -> None:
    assert is_existing("existing") and is_existing("existing-py_usr_bin_python3")
    assert not is_existing("virtualenv-py3.11") and not is_existing("existingish")
    assert results_file_name("0123456789abcdef", "existing-py_x") == "01234567-existing-py_x.json"
    assert results_suffix(None) == ".json" and results_suffix("e") == "-e.json"
