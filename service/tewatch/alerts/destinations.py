"""Where a webhook may be sent: public addresses only, and loopback where the settings allow it
(TEWATCH_WEBHOOK_ALLOW_LOOPBACK, which `tewatch campaign` turns on for its receiver on 127.0.0.1).

A receiver's URL comes from whoever holds an admin token; without this check the service would POST, and
report what came back, to its own loopback services, the cloud's metadata address (169.254.169.254) and
every private network it can reach. The check runs when a subscription is made (on the host as written
and on every address its name resolves to then) and again at every connection, on the addresses the
connection then goes to (tewatch.alerts.webhook_client), so that a name which resolves inside later is
refused too.
"""

from __future__ import annotations

import ipaddress
import socket

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
# IPv4-compatible (deprecated) and NAT64 addresses: the last 32 bits are an IPv4 address
CARRYING_IPV4 = (ipaddress.ip_network("::/96"), ipaddress.ip_network("64:ff9b::/96"))


class RefusedDestination(Exception):
    """A webhook host that is, or resolves to, an address the service does not send to."""


def refusal(address: IPAddress, allow_loopback: bool) -> str | None:
    """Why the service does not send to `address` (in words), or None when it may."""
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return refusal(embedded, allow_loopback)
    if address.is_loopback:
        return (
            None if allow_loopback else "a loopback address (TEWATCH_WEBHOOK_ALLOW_LOOPBACK=true allows it)"
        )
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_link_local:
        return "a link-local address"
    if address.version == 6 and address in UNIQUE_LOCAL:
        return "a unique local address"
    if address.is_private:
        return "a private address"
    if address.is_multicast:
        return "a multicast address"
    if not address.is_global:
        return "a reserved address, not a public one"
    return None


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and may reach (::ffff:127.0.0.1, ::127.0.0.1, NAT64's
    64:ff9b::7f00:1, 6to4, Teredo's client), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if any(address in network for network in CARRYING_IPV4) and int(address) > 1:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` stands for, in the resolver's order, as a connection would find them: the
    system resolver also reads the numeric spellings (127.1, 0x7f000001, 2130706433) as addresses."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).partition("%")[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def checked_addresses(host: str, port: int, allow_loopback: bool) -> list[IPAddress]:
    """The addresses of `host` a connection may go to: all of them, or RefusedDestination when any is
    internal (a name that resolves both inside and outside is refused whole)."""
    addresses = resolve(host, port)
    for address in addresses:
        why = refusal(address, allow_loopback)
        if why is not None:
            shown = host if host == str(address) else f"{host} ({address})"
            raise RefusedDestination(f"{shown} is {why}")
    return addresses


def check_subscription_host(host: str, port: int, allow_loopback: bool) -> None:
    """At subscribe time: refuse a host that is, or now resolves to, an internal address. A name that
    does not resolve yet is taken (each connection checks again)."""
    try:
        checked_addresses(host, port, allow_loopback)
    except (OSError, UnicodeError):
        return
