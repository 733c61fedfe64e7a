"""What a node's network looks like to torch.distributed, read without torch: its addresses,
the address gloo (or NCCL's bootstrap) binds, and whether another node reaches that address.

Why these: the ranks of a multi-node job meet through the store (MASTER_ADDR:MASTER_PORT), then
connect to each other directly, each on the address its backend picked: gloo the interface
named by GLOO_SOCKET_IFNAME, or else the address its host name resolves to (seen on torch 2.13:
a host whose name resolves to 127.0.1.1, as Debian's /etc/hosts has it, binds gloo there, and a
peer on another host fails with "Gloo connectFullMesh failed ... Connection refused,
remote=[127.0.1.1]"); NCCL the first interface NCCL_SOCKET_IFNAME matches. A preflight rank
listens on those addresses and the other nodes connect to them (`knock`).

Linux: interface addresses come from the kernel (SIOCGIFADDR, /proc/net); elsewhere the lists are
empty and the checks that need them are skipped.
"""

from __future__ import annotations

import errno
import socket
import struct
import threading
from pathlib import Path

#: ioctl to read an interface's IPv4 address
_SIOCGIFADDR = 0x8915


def interface_ips() -> dict[str, str]:
    """Each interface's (primary) IPv4 address, as gloo's GLOO_SOCKET_IFNAME would pick it."""
    try:
        import fcntl
    except ImportError:  # not Unix
        return {}
    found: dict[str, str] = {}
    for _, name in socket.if_nameindex() if hasattr(socket, "if_nameindex") else []:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                packed = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # no IPv4 address (down, or IPv6 only)
            found[name] = socket.inet_ntoa(packed[20:24])
    return found


def local_ips() -> list[str]:
    """Every address of this host, IPv4 (the kernel's LOCAL routes) and IPv6."""
    found: set[str] = set()
    try:
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
    except OSError:
        lines = []
    for previous, line in zip(lines, lines[1:]):
        if line.strip() == "/32 host LOCAL" and previous.strip().startswith("|--"):
            found.add(previous.strip()[3:].strip())
    try:
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            raw = line.split()[0]
            found.add(socket.inet_ntop(socket.AF_INET6, bytes.fromhex(raw)))
    except (OSError, ValueError, IndexError):
        pass
    return sorted(found)


def backend_address(variable: str, value: str | None, interfaces: dict[str, str], host_ips: list[str]) -> tuple[str, str] | None:
    """(what picked it, the IPv4 address) the backend binds: GLOO_SOCKET_IFNAME's interface (exact
    names), NCCL_SOCKET_IFNAME's (name prefixes, `=` for exact names, `^` to exclude), or for gloo
    without it the first address the host name resolves to. None when it names nothing here."""
    if value:
        exact = variable.startswith("GLOO") or value.startswith("=")
        excluded = value.startswith("^")
        names = [n.strip() for n in value.lstrip("=^").split(",") if n.strip()]
        for interface in sorted(interfaces):
            wanted = any(interface == n if exact else interface.startswith(n) for n in names)
            if wanted != excluded and not (excluded and interface == "lo"):
                return f"{variable}={value}", interfaces[interface]
        return None
    if variable.startswith("GLOO"):
        ipv4 = [ip for ip in host_ips if ":" not in ip]
        if ipv4:
            return f"the host name {socket.gethostname()}", ipv4[0]
    return None


class Listeners:
    """Sockets listening on the addresses other nodes must reach, answered until the process ends."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []

    def listen(self, ip: str) -> str | None:
        """Listen on ip (a free port); "ip:port", or None when this host cannot bind it."""
        try:
            server = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
            server.bind((ip, 0))
            server.listen(128)
        except OSError:
            return None
        self.sockets.append(server)
        threading.Thread(target=_answer, args=(server,), daemon=True).start()
        port = server.getsockname()[1]
        return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _answer(server: socket.socket) -> None:
    while True:
        try:
            connection, _ = server.accept()
        except OSError:
            return
        connection.close()


def knock(host: str, port: int, timeout: float) -> str | None:
    """One attempt to connect: None when something answered, else why not: "refused",
    "timeout", "unreachable" (no route) or "unresolvable"."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror:
        return "unresolvable"
    except (socket.timeout, TimeoutError):
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except OSError as exc:
        return "unreachable" if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH) else "refused"


def split_address(address: str) -> tuple[str, int]:
    """"ip:port" or "[v6]:port" -> (ip, port)."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)
