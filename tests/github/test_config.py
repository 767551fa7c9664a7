"""TEWATCH_GITHUB_* settings: what each wrong or missing one says, at load time and from the CLI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pydantic import ValidationError

from tewatch.core.github_config import github_config
from tewatch.core.settings import Settings

REPO = {"github_repository": "acme/TransformerEngine"}


def test_off_without_a_repository_and_on_with_a_token():
    assert github_config(Settings()) is None
    config = github_config(Settings(**REPO, github_token="ghp_abc"))
    assert (config.owner, config.repo, config.token, config.app) == (
        "acme",
        "TransformerEngine",
        "ghp_abc",
        None,
    )
    assert config.target == "https://api.github.com/repos/acme/TransformerEngine"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"github_token": "ghp_abc"}, "TEWATCH_GITHUB_REPOSITORY (owner/name) must be set"),
        (
            {"github_repository": "TransformerEngine", "github_token": "t"},
            "must be owner/name, got 'TransformerEngine'",
        ),
        (REPO, "no credentials are: set TEWATCH_GITHUB_TOKEN, or TEWATCH_GITHUB_APP_ID"),
        ({**REPO, "github_token": "t", "github_app_id": "1"}, "not both"),
        (
            {**REPO, "github_app_id": "1"},
            "also needs TEWATCH_GITHUB_APP_INSTALLATION_ID, TEWATCH_GITHUB_APP_PRIVATE_KEY",
        ),
        (
            {
                **REPO,
                "github_app_id": "1",
                "github_app_installation_id": 2,
                "github_app_private_key": "not a key",
            },
            "TEWATCH_GITHUB_APP_PRIVATE_KEY is not a PEM private key",
        ),
        (
            {
                **REPO,
                "github_app_id": "1",
                "github_app_installation_id": 2,
                "github_app_private_key_file": "/nonexistent/app.pem",
            },
            "cannot read TEWATCH_GITHUB_APP_PRIVATE_KEY_FILE",
        ),
        (
            {**REPO, "github_token": "t", "github_api_url": "api.github.com"},
            "TEWATCH_GITHUB_API_URL must be http(s)",
        ),
        (
            {**REPO, "github_token": "t", "github_status_context": " "},
            "TEWATCH_GITHUB_STATUS_CONTEXT must not be empty",
        ),
    ],
)
def test_bad_settings_name_what_is_wrong(values, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Settings(**values)


def test_an_app_key_must_be_rsa():
    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )
    with pytest.raises(ValidationError, match="is not an RSA key"):
        Settings(**REPO, github_app_id="1", github_app_installation_id=2, github_app_private_key=pem)


def test_the_cli_says_it_in_one_line(tmp_path):
    env = {**os.environ, "TEWATCH_GITHUB_REPOSITORY": "acme/TransformerEngine"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tewatch",
            "webhooks",
            "deliver",
            "--db",
            f"sqlite:///{tmp_path / 'x.sqlite3'}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: bad configuration: TEWATCH_GITHUB_REPOSITORY is set but no credentials are: set "
        "TEWATCH_GITHUB_TOKEN, or TEWATCH_GITHUB_APP_ID, TEWATCH_GITHUB_APP_PRIVATE_KEY(_FILE), "
        "TEWATCH_GITHUB_APP_INSTALLATION_ID"
    ]
