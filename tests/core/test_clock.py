"""Times as the service keeps them (tewatch.core.clock): UTC, from any zone, no zone, or epoch seconds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from tewatch.core.clock import as_utc, from_epoch_seconds


def test_a_time_without_a_zone_is_taken_as_utc():
    assert as_utc(datetime(2026, 11, 1, 12, 30)) == datetime(2026, 11, 1, 12, 30, tzinfo=UTC)


def test_a_time_in_another_zone_is_the_same_moment_in_utc():
    moment = as_utc(datetime(2026, 11, 1, 14, 30, tzinfo=timezone(timedelta(hours=2))))
    assert moment.tzinfo is UTC and (moment.hour, moment.minute) == (12, 30)


def test_epoch_seconds_are_a_utc_time():
    assert from_epoch_seconds(1_700_000_000.5) == datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=UTC)
