"""Settings refuse a store the service cannot run on, naming the setting."""

import pytest
from pydantic import ValidationError

from tewatch.core.settings import Settings


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://", "sqlite:///file:x?mode=memory&uri=true"])
def test_an_in_memory_sqlite_store_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="in-memory SQLite database"):
        Settings(database_url=url)


def test_a_sqlite_file_and_plain_postgresql_urls_are_taken() -> None:
    assert Settings(database_url="sqlite:///tewatch.sqlite3").database_url == "sqlite:///tewatch.sqlite3"
    assert Settings(database_url="postgresql://u@h/db").database_url == "postgresql+psycopg://u@h/db"
