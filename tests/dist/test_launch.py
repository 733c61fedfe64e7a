from __future__ import annotations

import socket

from torchdoctor.dist import launch
from torchdoctor.dist.coordinator import standalone_environments
from torchdoctor.dist.worker import describe_connect, wait_for_port


def test_launch_env_and_detection() -> None:
    environ = {"RANK": "1", "WORLD_SIZE": "2", "HOME": "/root", "LOCAL_RANK": "1"}
    assert launch.launch_env(environ) == {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}
    assert launch.is_launched(environ) and not launch.is_launched({"HOME": "/root"})


def test_resolution_and_loopback() -> None:
    assert "127.0.0.1" in (launch.resolve("localhost") or []) or "::1" in (launch.resolve("localhost") or [])
    assert launch.resolve("no-such-host.invalid") is None
    assert all(launch.is_loopback(a) for a in ("127.0.0.1", "127.0.1.1", "::1", "::ffff:127.0.0.1"))
    assert not any(launch.is_loopback(a) for a in ("10.0.0.1", "fe80::1%eth0", "node-0"))


def test_free_ports_are_free() -> None:
    port = launch.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_standalone_environments_look_like_torchrun_without_its_store() -> None:
    envs = standalone_environments(3, 4242, {"TORCHELASTIC_USE_AGENT_STORE": "True", "PATH": "/bin"})
    assert [(e["RANK"], e["LOCAL_RANK"], e["WORLD_SIZE"], e["MASTER_PORT"]) for e in envs] == [
        ("0", "0", "3", "4242"), ("1", "1", "3", "4242"), ("2", "2", "3", "4242")]
    assert all("TORCHELASTIC_USE_AGENT_STORE" not in e and e["PATH"] == "/bin" for e in envs)


def test_reaching_a_port_nobody_listens_on_is_refused_quickly() -> None:
    import time

    port = launch.free_port()
    assert wait_for_port("127.0.0.1", port, time.time() + 0.5) == "refused"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert wait_for_port("127.0.0.1", server.getsockname()[1], time.time() + 2) is None
    assert "nothing listens there" in describe_connect("refused", "127.0.0.1", port, 12)
