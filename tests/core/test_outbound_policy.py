"""The outbound policy on its own (gpuplatform/outbound/policy.py): which addresses and URLs each use may
reach. Pure: no database, no network (names resolve through the policy's own resolver)."""

from __future__ import annotations

import ipaddress

import pytest

from gpuplatform.outbound.policy import (
    OutboundPolicy,
    OutboundRefused,
    address_refusal,
    parse_networks,
    redact_url,
    vet_url,
)

USERS = OutboundPolicy()
CLUSTERS = OutboundPolicy(allow_private=True)
LISTED = OutboundPolicy(allowed_networks=parse_networks(["10.1.0.0/16", "127.0.0.1"]))


@pytest.mark.parametrize(
    ("address", "policy", "reason"),
    [
        ("169.254.169.254", LISTED, "a cloud metadata endpoint"),
        ("::ffff:169.254.169.254", CLUSTERS, "a cloud metadata endpoint"),
        ("fd00:ec2::254", CLUSTERS, "a cloud metadata endpoint"),
        ("100.100.100.200", CLUSTERS, "a cloud metadata endpoint"),
        ("169.254.10.1", CLUSTERS, "a link-local address"),
        ("fe80::1", CLUSTERS, "a link-local address"),
        ("0.0.0.0", CLUSTERS, "not a host address"),
        ("224.0.0.1", CLUSTERS, "not a host address"),
        ("240.0.0.1", CLUSTERS, "not a host address"),
        ("127.0.0.1", USERS, "a loopback address"),
        ("::1", CLUSTERS, "a loopback address"),
        ("10.2.3.4", USERS, "a private address"),
        ("10.2.3.4", LISTED, "a private address"),
        ("100.64.0.1", USERS, "a private address"),
        ("fc00::1", USERS, "a private address"),
        ("::ffff:192.168.1.1", USERS, "a private address"),
        ("10.2.3.4", CLUSTERS, ""),
        ("10.1.3.4", LISTED, ""),
        ("127.0.0.1", LISTED, ""),
        ("::1", OutboundPolicy(allow_loopback=True), ""),
        ("::1", OutboundPolicy(allowed_networks=parse_networks(["::1/128"])), ""),
        ("93.184.216.34", USERS, ""),
    ],
)
def test_each_address_is_judged_by_the_use_and_the_allow_list(address, policy, reason):
    assert address_refusal(ipaddress.ip_address(address), policy) == reason


def test_the_allow_list_never_unlocks_metadata_or_link_local():
    everything = OutboundPolicy(allowed_networks=parse_networks(["0.0.0.0/0", "::/0"]))
    assert address_refusal(ipaddress.ip_address("169.254.169.254"), everything)
    assert address_refusal(ipaddress.ip_address("169.254.1.1"), everything)
    assert address_refusal(ipaddress.ip_address("10.0.0.1"), everything) == ""


@pytest.mark.parametrize(
    ("url", "answers", "code"),
    [
        ("https://hooks.example/x", ["10.0.0.1", "93.184.216.34"], "outbound.address_refused"),
        ("https://metadata.google.internal./x", [], "outbound.address_refused"),
        ("https://a.localhost/x", [], "outbound.address_refused"),
        ("http://hooks.example/x", ["93.184.216.34"], "outbound.insecure_scheme"),
        ("http://hooks.example/x", [], "outbound.insecure_scheme"),
        ("https://user:pw@hooks.example/x", ["93.184.216.34"], "outbound.bad_url"),
        ("ftp://hooks.example/x", ["93.184.216.34"], "outbound.bad_url"),
        ("https:///x", [], "outbound.bad_url"),
    ],
)
def test_a_url_is_refused_for_any_address_its_name_has(url, answers, code):
    with pytest.raises(OutboundRefused) as refused:
        vet_url(url, OutboundPolicy(resolve=lambda _host: answers))
    assert refused.value.code == code


def test_plain_http_only_to_an_allow_listed_address():
    policy = OutboundPolicy(allowed_networks=parse_networks(["10.1.0.0/16"]), resolve=lambda _h: ["10.1.2.3"])
    assert vet_url("http://prometheus.monitoring:9090", policy) == "http://prometheus.monitoring:9090"
    assert (
        vet_url("https://hooks.example/x", OutboundPolicy(resolve=lambda _h: [])) == "https://hooks.example/x"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://hooks.slack.com/services/T0/B0/secret", "https://hooks.slack.com/…"),
        ("https://hooks.example:8443/?token=secret", "https://hooks.example:8443/…"),
        ("https://[2001:db8::1]/hook", "https://[2001:db8::1]/…"),
        ("https://hooks.example", "https://hooks.example"),
        ("not a url", ""),
    ],
)
def test_a_redacted_url_keeps_scheme_and_host_only(url, shown):
    assert redact_url(url) == shown


def test_a_bad_network_in_the_setting_is_named():
    with pytest.raises(ValueError, match=r"10\.0\.0\.0/33"):
        parse_networks(["10.0.0.0/8", "10.0.0.0/33"])
