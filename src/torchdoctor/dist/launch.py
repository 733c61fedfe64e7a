"""The launch environment, read without torch: what torchrun, srun or a hand-written script set.

torch.distributed's `env://` rendezvous reads RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT;
launchers add LOCAL_RANK and LOCAL_WORLD_SIZE. These are checked before any process is started,
so a typo fails in milliseconds.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Mapping

from torchdoctor.dist import slurm

REQUIRED = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
OPTIONAL = ("LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE",
            "TORCHELASTIC_RESTART_COUNT")


def launch_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The launch variables that are set (SLURM's too)."""
    return {name: environ[name] for name in (*REQUIRED, *OPTIONAL, *slurm.VARIABLES) if name in environ}


def is_launched(environ: Mapping[str, str]) -> bool:
    """True when a launcher started this process as one rank (any of the required variables is set)."""
    return any(name in environ for name in REQUIRED)


def integer(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def resolve(host: str, timeout: float = 3.0, ordered: bool = False) -> list[str] | None:
    """The addresses `host` resolves to (sorted, or in the resolver's order, which is the order a
    backend tries them in); None when it does not resolve within `timeout` seconds."""
    found: list[list[str] | None] = [None]

    def lookup() -> None:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
            addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
            found[0] = addresses if ordered else sorted(addresses)
        except (OSError, UnicodeError):
            found[0] = None

    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(timeout)
    return found[0]


def is_loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the kernel's choice, so parallel runs do not collide)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
