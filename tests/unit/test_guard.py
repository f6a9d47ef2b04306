"""The address guard: every way a URL can point at something cronpilot must not call."""

from __future__ import annotations

import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from cronpilot.adapters.http.guard import AddressPolicy, check_url, is_allowed_address
from cronpilot.adapters.http.resolver import GuardedResolver
from cronpilot.domain.errors import InvalidConfig, UnsafeURL

LOOPBACK_ONLY = ["127.0.0.1/32"]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/file", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("gopher://example.com/", "scheme"),
        ("http:///path", "no host"),
        ("http://user:pw@example.com/", "credentials"),
        ("http://example.com@127.0.0.1/", "credentials"),
        ("http://127.0.0.1/", "loopback"),
        ("http://127.0.0.1./", "loopback"),
        ("http://127.1/", "non-canonical IPv4 form of 127.0.0.1"),
        ("http://2130706433/", "non-canonical IPv4 form of 127.0.0.1"),
        ("http://0x7f.1/", "non-canonical IPv4 form of 127.0.0.1"),
        ("http://0x7f000001/", "non-canonical IPv4 form of 127.0.0.1"),
        ("http://0177.0.0.1/", "non-canonical IPv4 form of 127.0.0.1"),
        ("http://999.1.1.1/", "not a valid IPv4 address"),
        ("http://10.0.0.1/", "private"),
        ("http://172.16.5.4/", "private"),
        ("http://192.168.1.1:8080/admin", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://100.64.0.1/", "shared CGNAT"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://240.0.0.1/", "reserved"),
        ("http://255.255.255.255/", "reserved"),
        ("http://[::1]/", "loopback"),
        ("http://[::]/", "unspecified"),
        ("http://[fe80::1%25eth0]/", "link-local"),
        ("http://[fd12:3456::1]/", "private"),
        ("http://[fec0::1]/", "site-local"),
        ("http://[ff02::1]/", "multicast"),
        ("http://[::127.0.0.1]/", "reserved"),
        ("http://[::ffff:127.0.0.1]/", "IPv4-mapped 127.0.0.1: 127.0.0.1 is loopback"),
        ("http://[::ffff:a9fe:a9fe]/", "IPv4-mapped 169.254.169.254"),
        ("http://[2002:7f00:1::]/", "6to4 127.0.0.1"),
        ("http://[2002:a00:1::]/", "6to4 10.0.0.1"),
        ("http://[64:ff9b::a00:1]/", "NAT64 10.0.0.1"),
        ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", "Teredo 10.0.0.1"),
        ("http://localhost/", "loopback"),
        ("http://LOCALHOST./", "loopback"),
        ("http://api.localhost:8000/", "loopback"),
    ],
)
def test_hostile_urls_are_refused_with_their_reason(url: str, reason: str) -> None:
    with pytest.raises(UnsafeURL) as refused:
        check_url(url)
    assert reason in refused.value.reason


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/x?page=2",
        "http://api.example.com:8080/v1/score",
        "http://93.184.216.34/",
        "http://[2606:4700:4700::1111]/dns",
        "http://[2002:808:808::]/",
        "http://[::ffff:8.8.8.8]/",
    ],
)
def test_public_urls_pass(url: str) -> None:
    check_url(url)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:8080/", LOOPBACK_ONLY),
        ("http://localhost:8080/", LOOPBACK_ONLY),
        ("http://[::ffff:127.0.0.1]/", LOOPBACK_ONLY),
        ("http://10.1.2.3/", ["10.0.0.0/8"]),
        ("http://[fd00::5]/", ["fd00::/8"]),
    ],
)
def test_allowlisted_networks_pass(url: str, allowed: list[str]) -> None:
    check_url(url, allowed)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.2/", LOOPBACK_ONLY),
        ("http://10.0.0.1/", LOOPBACK_ONLY),
        ("http://localhost/", ["10.0.0.0/8"]),
        # Ambiguous numeric forms stay refused even when their address is allowed.
        ("http://2130706433/", LOOPBACK_ONLY),
    ],
)
def test_allowlist_does_not_open_anything_else(url: str, allowed: list[str]) -> None:
    with pytest.raises(UnsafeURL):
        check_url(url, allowed)


def test_remembered_verdicts_belong_to_their_policy() -> None:
    """Verdicts are cached per host for speed: asking again, or asking another policy about
    the same host, must give that policy's verdict every time."""
    loopback_allowed = AddressPolicy.from_networks(LOOPBACK_ONLY)
    strict = AddressPolicy()
    for path in ("/a", "/b", "/a"):
        loopback_allowed.check_target(URL(f"http://127.0.0.1:8080{path}"))
        with pytest.raises(UnsafeURL, match="loopback"):
            strict.check_target(URL(f"http://127.0.0.1:8080{path}"))
        with pytest.raises(UnsafeURL, match="non-canonical"):
            loopback_allowed.check_target(URL(f"http://2130706433{path}"))


@pytest.mark.parametrize(
    ("ip", "allowed", "expected"),
    [
        ("8.8.8.8", [], True),
        ("2606:4700:4700::1111", [], True),
        ("127.0.0.1", [], False),
        ("169.254.169.254", [], False),
        ("100.127.255.254", [], False),
        ("::ffff:10.0.0.1", [], False),
        ("fe80::1%eth0", [], False),
        ("127.0.0.1", LOOPBACK_ONLY, True),
        ("127.0.0.5", ["127.0.0.0/8"], True),
        ("::1", LOOPBACK_ONLY, False),
        ("192.168.0.9", ["192.168.0.0/24", "10.0.0.0/8"], True),
        ("not-an-address", [], False),
    ],
)
def test_is_allowed_address(ip: str, allowed: list[str], expected: bool) -> None:
    assert is_allowed_address(ip, allowed) is expected


@pytest.mark.parametrize("cidr", ["10.0.0.0/33", "banana", "10.0.0.0/8/8", ""])
def test_an_invalid_allowlist_entry_is_a_config_error(cidr: str) -> None:
    with pytest.raises(InvalidConfig) as invalid:
        is_allowed_address("8.8.8.8", [cidr])
    assert invalid.value.where == "allowed_networks"
    assert repr(cidr) in invalid.value.reason


class ScriptedResolver(AbstractResolver):
    """Answers each lookup with the next scripted address list, as a rebinding DNS would."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=ip, port=port, family=family, proto=0, flags=0)
            for ip in self.answers.pop(0)
        ]

    async def close(self) -> None:
        pass


async def test_resolver_drops_refused_addresses_from_an_answer() -> None:
    resolver = GuardedResolver(AddressPolicy(), ScriptedResolver(["10.0.0.7", "93.184.216.34"]))
    results = await resolver.resolve("mixed.example", 443)
    assert [result["host"] for result in results] == ["93.184.216.34"]


async def test_resolver_checks_every_resolution_so_rebinding_is_refused() -> None:
    resolver = GuardedResolver(
        AddressPolicy(), ScriptedResolver(["93.184.216.34"], ["169.254.169.254"])
    )
    first = await resolver.resolve("rebind.example", 80)
    assert [result["host"] for result in first] == ["93.184.216.34"]
    with pytest.raises(UnsafeURL) as refused:
        await resolver.resolve("rebind.example", 80)
    assert "169.254.169.254" in refused.value.reason


async def test_resolver_lets_allowlisted_addresses_through() -> None:
    policy = AddressPolicy.from_networks(LOOPBACK_ONLY)
    resolver = GuardedResolver(policy, ScriptedResolver(["::1", "127.0.0.1"]))
    results = await resolver.resolve("localhost", 8080)
    assert [result["host"] for result in results] == ["127.0.0.1"]


@pytest.mark.parametrize(
    ("url", "network"),
    [
        ("http://10.0.0.9/x", "10.0.0.9/32"),
        ("http://127.0.0.1:8080/", "127.0.0.1/32"),
        ("http://localhost/", "127.0.0.1/32"),
        ("http://[fe80::1%25eth0]/", "fe80::1/128"),
    ],
)
def test_a_refused_address_names_the_setting_and_the_network_that_let_it_through(
    url: str, network: str
) -> None:
    with pytest.raises(UnsafeURL) as refused:
        check_url(url)

    assert refused.value.reason.endswith(f"add {network} to CRONPILOT_ALLOWED_NETWORKS")
    check_url(url, [network])
