"""What a node's network looks like to torch.distributed, read without torch: its addresses,
the address gloo (or NCCL's bootstrap) binds, and whether another node reaches that address.

Why these: the ranks of a multi-node job meet through the store (MASTER_ADDR:MASTER_PORT), then
connect to each other directly, each on the address its backend picked: gloo the interface
named by GLOO_SOCKET_IFNAME, or else the address its host name resolves to (seen on torch 2.13:
a host whose name resolves to 127.0.1.1, as Debian's /etc/hosts has it, binds gloo there, and a
peer on another host fails with "Gloo connectFullMesh failed ... Connection refused,
remote=[127.0.1.1]"); NCCL the first interface NCCL_SOCKET_IFNAME matches. A preflight rank
listens on those addresses and the other nodes connect to them (`knock`).

Interface addresses come from psutil (the OS's own list: getifaddrs); a host without any gives
empty lists, and the checks that need them are skipped.
"""

from __future__ import annotations

import errno
import socket
import threading

import psutil


def interface_ips() -> dict[str, str]:
    """Each interface's (first) IPv4 address, as gloo's GLOO_SOCKET_IFNAME would pick it."""
    found: dict[str, str] = {}
    for name, addresses in psutil.net_if_addrs().items():
        first = next((a.address for a in addresses if a.family == socket.AF_INET), None)
        if first is not None:
            found[name] = first
    return found


def local_ips() -> list[str]:
    """Every address of this host, IPv4 and IPv6 (without an IPv6 address's `%interface`)."""
    return sorted({a.address.split("%", 1)[0] for addresses in psutil.net_if_addrs().values() for a in addresses
                   if a.family in (socket.AF_INET, socket.AF_INET6)})


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
    except TimeoutError:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except OSError as exc:
        return "unreachable" if exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH) else "refused"


def split_address(address: str) -> tuple[str, int]:
    """"ip:port" or "[v6]:port" -> (ip, port)."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)
