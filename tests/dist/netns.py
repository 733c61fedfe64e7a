"""Two hosts on this machine, for the checks that need two networks: two Linux network namespaces
joined by a veth pair (10.77.x.1 and 10.77.x.2), each with its own host name (a UTS namespace)
and /etc/hosts (`ip netns exec` mounts /etc/netns/<name>/hosts over it), and optionally a second
interface on each (`side`, on a network of its own that the other host has no route to).
Needs root, iproute2 and unshare; `available()` says whether this machine allows it."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests import children

ETC = Path("/etc/netns")


def available() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        return False
    name = f"tdprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode == 0
    if made:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return made


@dataclass
class Host:
    namespace: str
    name: str  # its host name
    address: str  # on the link between the two hosts
    side: str  # on its own network, unreachable from the other host
    link: str  # the interface with `address`
    side_link: str  # the interface with `side`

    def command(self, argv: list[str], env: dict[str, str]) -> list[str]:
        """argv run on this host, with env added."""
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        shell = f"hostname {self.name} && exec env {assignments} {shlex.join(argv)}"
        return ["ip", "netns", "exec", self.namespace, "unshare", "--uts", "sh", "-c", shell]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def two_hosts(loopback_name: bool = False) -> Iterator[tuple[Host, Host]]:
    """Host a (node-a) and host b (node-b). With `loopback_name`, node-b's /etc/hosts maps its own
    name to 127.0.1.1 (Debian's default). Addresses on 192.168.x so that they sort after 127.0.1.1:
    gloo's pairs then connect towards node-b's loopback address (see network.py)."""
    tag = f"{os.getpid() % 10000}"
    net = 1 + os.getpid() % 200
    links = [f"tdl{tag}a", f"tdl{tag}b", f"tds{tag}a", f"tds{tag}b"]
    a = Host(f"tda{tag}", "node-a", f"192.168.{net}.1", f"10.201.{net}.1", links[0], links[2])
    b = Host(f"tdb{tag}", "node-b", f"192.168.{net}.2", f"10.202.{net}.2", links[1], links[3])
    try:
        for host in (a, b):
            _ip("netns", "add", host.namespace)
            _ip("-n", host.namespace, "link", "set", "lo", "up")
        _ip("link", "add", links[0], "type", "veth", "peer", "name", links[1])
        for host, link in ((a, links[0]), (b, links[1])):
            _ip("link", "set", link, "netns", host.namespace)
            _ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", link)
            _ip("-n", host.namespace, "link", "set", link, "up")
        for host, link in ((a, links[2]), (b, links[3])):  # a side network each: its peer stays outside
            _ip("link", "add", link, "type", "veth", "peer", "name", link + "p")
            _ip("link", "set", link, "netns", host.namespace)
            _ip("-n", host.namespace, "addr", "add", f"{host.side}/24", "dev", link)
            _ip("-n", host.namespace, "link", "set", link, "up")
            _ip("link", "set", link + "p", "up")
        for host in (a, b):
            (ETC / host.namespace).mkdir(parents=True, exist_ok=True)
            own = "127.0.1.1" if loopback_name and host is b else host.address
            other = b if host is a else a
            (ETC / host.namespace / "hosts").write_text(f"127.0.0.1 localhost\n{own} {host.name}\n{other.address} {other.name}\n")
        yield a, b
    finally:
        for host in (a, b):
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)
            shutil.rmtree(ETC / host.namespace, ignore_errors=True)
        for link in (links[2] + "p", links[3] + "p"):
            subprocess.run(["ip", "link", "del", link], capture_output=True)


def run_both(commands: list[list[str]], env: dict[str, str] | None = None, timeout: float = 180) -> list[subprocess.CompletedProcess[str]]:
    """Start the commands at once, wait for each (remembered for the failure report)."""
    started = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for c in commands]
    done = []
    for command, process in zip(commands, started):
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in started:
                other.kill()
            out, err = process.communicate()
            children.remember(command, None, out, err)
            raise
        children.remember(command, process.returncode, out, err)
        done.append(subprocess.CompletedProcess(command, process.returncode, out, err))
    return done


PYTHON = [sys.executable, "-m", "torchdoctor", "dist"]
