"""The nodes' addresses (dist/network.py): which address a backend binds, listening and knocking,
and this host's own addresses."""

from __future__ import annotations

import socket

import pytest

from torchdoctor.dist.launch import free_port
from torchdoctor.dist.network import Listeners, backend_address, interface_ips, knock, local_ips, split_address

INTERFACES = {"lo": "127.0.0.1", "eth0": "10.0.0.5", "ib0": "10.9.0.5"}


@pytest.mark.parametrize(("variable", "value", "picked"), [
    ("GLOO_SOCKET_IFNAME", "ib0", ("GLOO_SOCKET_IFNAME=ib0", "10.9.0.5")),
    ("GLOO_SOCKET_IFNAME", "ib", None),  # gloo wants exact names
    ("NCCL_SOCKET_IFNAME", "ib", ("NCCL_SOCKET_IFNAME=ib", "10.9.0.5")),  # NCCL: prefixes
    ("NCCL_SOCKET_IFNAME", "=eth0", ("NCCL_SOCKET_IFNAME==eth0", "10.0.0.5")),
    ("NCCL_SOCKET_IFNAME", "^ib,docker", ("NCCL_SOCKET_IFNAME=^ib,docker", "10.0.0.5")),  # excluded, and never lo
    ("NCCL_SOCKET_IFNAME", None, None),  # NCCL's own choice: nothing to say
])
def test_the_address_a_backend_binds(variable: str, value: str | None, picked: tuple[str, str] | None) -> None:
    assert backend_address(variable, value, INTERFACES, ["10.0.0.5"]) == picked


def test_gloo_without_an_interface_binds_what_the_host_name_resolves_to() -> None:
    via, ip = backend_address("GLOO_SOCKET_IFNAME", None, INTERFACES, ["127.0.1.1", "10.0.0.5"])  # type: ignore[misc]
    assert ip == "127.0.1.1" and via == f"the host name {socket.gethostname()}"
    assert backend_address("GLOO_SOCKET_IFNAME", None, INTERFACES, ["fe80::1"]) is None


def test_a_listener_answers_and_a_closed_port_is_refused() -> None:
    listeners = Listeners()
    address = listeners.listen("127.0.0.1")
    assert address is not None and knock(*split_address(address), timeout=2) is None
    assert knock("127.0.0.1", free_port(), timeout=2) == "refused"
    assert listeners.listen("203.0.113.7") is None  # not an address of this host


def test_this_hosts_addresses() -> None:
    assert "127.0.0.1" in local_ips() and interface_ips().get("lo") == "127.0.0.1"
