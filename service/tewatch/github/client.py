"""A githubkit client for the configured repository, with retries left to the outbox."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tewatch import __version__
from tewatch.core.github_config import GitHubConfig

if TYPE_CHECKING:
    from githubkit import GitHub


def github_client(config: GitHubConfig, timeout_seconds: float) -> GitHub:
    """githubkit's own retries sleep inside the request; the outbox schedules them instead (durably, and
    without holding up the deliveries behind this one), so auto_retry is off."""
    from githubkit import AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
    from githubkit.cache import MemCacheStrategy

    auth: AppInstallationAuthStrategy | TokenAuthStrategy
    if config.app is not None:
        auth = AppInstallationAuthStrategy(
            config.app.app_id, config.app.private_key, config.app.installation_id
        )
    else:
        auth = TokenAuthStrategy(config.token or "")
    return GitHub(
        auth,
        base_url=config.api_url,
        timeout=timeout_seconds,
        user_agent=f"tewatch/{__version__}",
        auto_retry=False,
        http_cache=False,
        follow_redirects=False,
        cache_strategy=MemCacheStrategy(),  # installation tokens of this client's App only
    )
