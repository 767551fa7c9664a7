from tests.dashboards.conftest import browser, page  # noqa: F401  (Chromium, as the page tests use it)
