"""The GitHub integration's configuration, checked once from the service settings (TEWATCH_GITHUB_*)."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from tewatch.core.settings import Settings

REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
APP_SETTINGS = (
    "TEWATCH_GITHUB_APP_ID",
    "TEWATCH_GITHUB_APP_PRIVATE_KEY(_FILE)",
    "TEWATCH_GITHUB_APP_INSTALLATION_ID",
)


@dataclass(frozen=True)
class AppCredentials:
    app_id: str
    private_key: str  # PEM
    installation_id: int


@dataclass(frozen=True)
class GitHubConfig:
    owner: str
    repo: str
    api_url: str
    status_context: str
    token: str | None = None
    app: AppCredentials | None = None

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.repo}"

    @property
    def target(self) -> str:
        """What the outbox's GitHub subscription names as its URL."""
        return f"{self.api_url.rstrip('/')}/repos/{self.repository}"


def github_config(settings: Settings) -> GitHubConfig | None:
    """The integration's configuration, None when it is off; a ValueError names the setting at fault."""
    token = settings.github_token.get_secret_value() if settings.github_token else ""
    key_text = settings.github_app_private_key.get_secret_value() if settings.github_app_private_key else ""
    key_file = settings.github_app_private_key_file
    app_given = bool(settings.github_app_id or key_text or key_file or settings.github_app_installation_id)
    if not settings.github_repository:
        if token or app_given:
            raise ValueError(
                "TEWATCH_GITHUB_REPOSITORY (owner/name) must be set with the other TEWATCH_GITHUB_ settings"
            )
        return None
    if not REPOSITORY.fullmatch(settings.github_repository):
        raise ValueError(f"TEWATCH_GITHUB_REPOSITORY must be owner/name, got {settings.github_repository!r}")
    _check_api_url(settings.github_api_url)
    if not settings.github_status_context.strip():
        raise ValueError("TEWATCH_GITHUB_STATUS_CONTEXT must not be empty")
    if importlib.util.find_spec("githubkit") is None:
        raise ValueError("the GitHub integration needs githubkit: pip install 'tewatch[github]'")
    if token and app_given:
        raise ValueError(
            "set TEWATCH_GITHUB_TOKEN or the GitHub App settings (TEWATCH_GITHUB_APP_*), not both"
        )
    if not token and not app_given:
        raise ValueError(
            "TEWATCH_GITHUB_REPOSITORY is set but no credentials are: set TEWATCH_GITHUB_TOKEN, "
            f"or {', '.join(APP_SETTINGS)}"
        )
    owner, repo = settings.github_repository.split("/")
    common: dict[str, Any] = {
        "owner": owner,
        "repo": repo,
        "api_url": settings.github_api_url,
        "status_context": settings.github_status_context.strip(),
    }
    if token:
        return GitHubConfig(**common, token=token)
    return GitHubConfig(**common, app=_app_credentials(settings, key_text))


def _check_api_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"TEWATCH_GITHUB_API_URL must be http(s)://host[/path], got {url!r}")


def _app_credentials(settings: Settings, key_text: str) -> AppCredentials:
    missing = [
        name
        for name, value in (
            ("TEWATCH_GITHUB_APP_ID", settings.github_app_id),
            ("TEWATCH_GITHUB_APP_INSTALLATION_ID", settings.github_app_installation_id),
        )
        if not value
    ]
    if key_text and settings.github_app_private_key_file:
        raise ValueError(
            "set TEWATCH_GITHUB_APP_PRIVATE_KEY or TEWATCH_GITHUB_APP_PRIVATE_KEY_FILE, not both"
        )
    if not key_text and not settings.github_app_private_key_file:
        missing.append("TEWATCH_GITHUB_APP_PRIVATE_KEY (or _FILE)")
    if missing:
        raise ValueError(f"GitHub App authentication also needs {', '.join(missing)}")
    source = "TEWATCH_GITHUB_APP_PRIVATE_KEY"
    if settings.github_app_private_key_file:
        path = settings.github_app_private_key_file
        source = f"TEWATCH_GITHUB_APP_PRIVATE_KEY_FILE ({path})"
        try:
            key_text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {source}: {exc}") from None
    _check_private_key(key_text, source)
    assert settings.github_app_installation_id is not None  # in `missing` otherwise
    return AppCredentials(str(settings.github_app_id), key_text, settings.github_app_installation_id)


def _check_private_key(pem: str, source: str) -> None:
    """The App's key signs JWTs with RS256 (githubkit through PyJWT): it must load as an RSA private key."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{source} is not a PEM private key without a passphrase ({exc})") from None
    if not isinstance(key, RSAPrivateKey):
        raise ValueError(f"{source} is not an RSA key (GitHub App keys are RSA)")
