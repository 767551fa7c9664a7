"""Which addresses webhooks may go to, judged address by address (tewatch.alerts.destinations)."""

from __future__ import annotations

import ipaddress

import pytest

from tewatch.alerts.destinations import RefusedDestination, checked_addresses, refusal


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.0.9", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::127.0.0.1", "loopback"),
        ("64:ff9b::7f00:1", "loopback"),
        ("2002:7f00:1::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("10.1.2.3", "private"),
        ("172.31.0.1", "private"),
        ("192.168.0.1", "private"),
        ("fd12:3456::1", "unique local"),
        ("224.0.0.251", "multicast"),
        ("ff02::1", "multicast"),
        ("100.64.0.1", "reserved"),
    ],
)
def test_internal_addresses_are_refused(address: str, why: str) -> None:
    assert why in (refusal(ipaddress.ip_address(address), allow_loopback=False) or "")


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "64:ff9b::808:808"])
def test_public_addresses_are_not(address: str) -> None:
    assert refusal(ipaddress.ip_address(address), allow_loopback=False) is None


def test_loopback_is_allowed_only_when_asked_and_nothing_else_with_it() -> None:
    for address in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        assert refusal(ipaddress.ip_address(address), allow_loopback=True) is None
    for address in ("169.254.169.254", "10.0.0.1", "0.0.0.0"):
        assert refusal(ipaddress.ip_address(address), allow_loopback=True) is not None


@pytest.mark.parametrize("host", ["127.1", "0x7f000001", "2130706433", "localhost"])
def test_numeric_spellings_and_names_are_judged_by_what_they_resolve_to(host: str) -> None:
    with pytest.raises(RefusedDestination, match=rf"^{host} \("):
        checked_addresses(host, 80, allow_loopback=False)
    assert all(address.is_loopback for address in checked_addresses(host, 80, allow_loopback=True))
