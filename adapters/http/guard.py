"""Which URLs and addresses cronpilot may call: the Safety rules of the design.

User URLs are untrusted, so an endpoint must not reach the machine's own services, the private
network or a cloud metadata service unless an operator allowlists that network. The checks
here are pure; `adapters.http.resolver` applies the same policy to every address DNS returns,
so the address checked is the address connected to.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from yarl import URL

from cronpilot.adapters.settings import ENV_PREFIX
from cronpilot.domain.errors import InvalidConfig, UnsafeURL
from cronpilot.domain.runs.excerpt import excerpt

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_SCHEMES = frozenset({"http", "https"})
_SHARED_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_LOOPBACK_NAMES = (ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1"))
# The shapes inet_aton accepts besides dotted decimal: 1-4 parts, each decimal, octal (leading
# 0) or hex (0x). Browsers, curl and libc read these differently, which is why they are refused.
_LEGACY_IPV4 = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}", re.I)


def allow_hint(network: str) -> str:
    """How to let a refused address through, for a refusal's message: an operator reading it
    learns the setting, and the network to put in it."""
    return f"; to call it, add {network} to {ENV_PREFIX}ALLOWED_NETWORKS"


def parse_networks(allowed_networks: Sequence[str]) -> tuple[IPNetwork, ...]:
    """CIDR strings as networks; raises `InvalidConfig` naming the bad entry."""
    networks = []
    for cidr in allowed_networks:
        try:
            networks.append(ipaddress.ip_network(cidr.strip(), strict=False))
        except ValueError as exc:
            raise InvalidConfig("allowed_networks", f"{cidr!r} is not a CIDR network") from exc
    return tuple(networks)


def _category(addr: IPAddress) -> str | None:
    """Why `addr` is not a public address, or None when it is."""
    checks = (
        (addr.is_unspecified, "unspecified"),
        (addr.is_loopback, "loopback"),
        (addr.is_link_local, "link-local"),
        (addr.is_multicast, "multicast"),
        (addr in _SHARED_CGNAT, "shared CGNAT"),
        (addr.is_reserved, "reserved"),
        (addr.is_private, "private"),
        (isinstance(addr, ipaddress.IPv6Address) and addr.is_site_local, "site-local"),
        (not addr.is_global, "not globally routable"),
    )
    return next((name for refused, name in checks if refused), None)


def _embedded_ipv4(addr: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 address carries (and how), since traffic may end up there."""
    if addr.ipv4_mapped is not None:
        return "IPv4-mapped", addr.ipv4_mapped
    if addr.sixtofour is not None:
        return "6to4", addr.sixtofour
    if addr.teredo is not None:
        return "Teredo", addr.teredo[1]
    if addr in _NAT64_WELL_KNOWN:
        return "NAT64", ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Public addresses plus the operator's allowlist; parsed once, consulted per connection."""

    allowed: tuple[IPNetwork, ...] = ()

    @classmethod
    def from_networks(cls, allowed_networks: Sequence[str]) -> AddressPolicy:
        return cls(parse_networks(allowed_networks))

    def refusal(self, addr: IPAddress) -> str | None:
        """Why a connection to `addr` is refused, or None when it is allowed."""
        if any(addr in network for network in self.allowed):
            return None
        if isinstance(addr, ipaddress.IPv6Address):
            embedded = _embedded_ipv4(addr)
            if embedded is not None:
                how, inner = embedded
                inner_refusal = self.refusal(inner)
                if inner_refusal is not None:
                    return f"{how} {inner}: {inner_refusal}"
                if how == "IPv4-mapped":
                    # The socket connects to the IPv4 address itself.
                    return None
        category = _category(addr)
        if category is None:
            return None
        # The network of this one address; an IPv6 zone (`%eth0`) has no place in a CIDR.
        single = f"{str(addr).partition('%')[0]}/{addr.max_prefixlen}"
        return f"{addr} is {category}{allow_hint(single)}"

    def allows(self, ip: str) -> bool:
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return False
        return self.refusal(addr) is None

    def check_target(self, url: URL) -> None:
        """Refuse a URL that is not http(s), has no host, carries credentials, or names a
        refused address literally. Host names are left to the resolver, which sees the answer
        DNS gives at connect time."""
        if url.scheme not in _SCHEMES:
            raise UnsafeURL(str(url), f"scheme {excerpt(repr(url.scheme))} is not http or https")
        host = url.raw_host
        if not host:
            raise UnsafeURL(str(url), "no host")
        if url.raw_user is not None or url.raw_password is not None:
            raise UnsafeURL(str(url.with_user(None)), "credentials in the URL; use a header")
        reason = self._host_refusal(host)
        if reason is not None:
            raise UnsafeURL(str(url), reason)

    # Cached per host: the verdict depends on the policy and the host alone, and a worker's
    # thousands of URLs name a handful of hosts. Names that need DNS pass here and are checked
    # by the resolver on every resolution, so the address connected to is always checked.
    @functools.lru_cache(maxsize=1024)  # noqa: B019 - a policy lives as long as its dispatcher
    def _host_refusal(self, host: str) -> str | None:
        """Why a URL naming `host` is refused before any DNS: a refused address written
        literally, or a numeric host in a non-canonical form. None when it may go on."""
        try:
            addr = _literal_address(host)
        except ValueError as exc:
            return str(exc)
        return None if addr is None else self.refusal(addr)


@functools.lru_cache(maxsize=4096)
def parse_url(url: str) -> URL:
    """`url` parsed as aiohttp will read it; raises `UnsafeURL` when it cannot be parsed."""
    try:
        return URL(url)
    except (TypeError, ValueError) as exc:
        raise UnsafeURL(url, "not a valid URL") from exc


def _literal_address(host: str) -> IPAddress | None:
    """The address a host names by itself, or None for a name that needs DNS.

    Numeric hosts in anything but canonical form are refused outright (ValueError): they are
    the classic way to make two parsers disagree about where a URL points."""
    bare = host.removesuffix(".")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if not _LEGACY_IPV4.fullmatch(bare):
        return None
    try:
        decoded = ipaddress.IPv4Address(socket.inet_aton(bare))
    except OSError:
        raise ValueError(f"{host!r} is not a valid IPv4 address") from None
    raise ValueError(f"non-canonical IPv4 form of {decoded}; write {decoded}")


def _is_localhost_name(host: str) -> bool:
    bare = host.removesuffix(".").lower()
    return bare == "localhost" or bare.endswith(".localhost")


def is_allowed_address(ip: str, allowed_networks: Sequence[str]) -> bool:
    """True for a public address or one inside `allowed_networks` (CIDR strings).

    Raises `InvalidConfig` for an invalid CIDR; an unparsable `ip` is not allowed."""
    return AddressPolicy.from_networks(allowed_networks).allows(ip)


def check_url(url: str, allowed_networks: Sequence[str] = ()) -> None:
    """Raise `UnsafeURL` for a URL cronpilot must not call, at config time, in one clear error.

    Names other than `localhost` are not resolved here: DNS may answer differently later, so
    the resolver checks again on every connection."""
    policy = AddressPolicy.from_networks(allowed_networks)
    parsed = parse_url(url)
    policy.check_target(parsed)
    host = parsed.raw_host or ""
    if _is_localhost_name(host):
        reasons = [policy.refusal(addr) for addr in _LOOPBACK_NAMES]
        if all(reasons):
            raise UnsafeURL(url, f"{excerpt(host)} is loopback{allow_hint('127.0.0.1/32')}")
