"""TD716 hostname-resolves-to-loopback."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD716",
    name="hostname-resolves-to-loopback",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message="{which} on {host}: the host name {host} resolves to {ips} there, so gloo listens on a loopback address that the ranks of other nodes cannot reach",
    hint="Set GLOO_SOCKET_IFNAME to the interface that reaches the other nodes (see `ip -br addr`) on every node, or make the host name resolve to that interface's address (/etc/hosts: the 127.0.1.1 line Debian and Ubuntu add).",
    doc="""
## What it does
Without `GLOO_SOCKET_IFNAME`, gloo binds to the first address the host's own name resolves to.
In a job on several hosts, a host whose name resolves to a loopback address (`127.0.1.1`, as
Debian's and Ubuntu's `/etc/hosts` have it) is reported.

## Why is this bad?
Each rank tells the others the address it listens on. Seen on torch 2.13 with two hosts, the
one whose name resolved to `127.0.1.1` listening there: the other failed in
`init_process_group` after the process group's timeout with `Gloo connectFullMesh failed with
[...] timed out connecting: SO_ERROR: Connection refused, remote=[127.0.1.1]`. Whether a job
fails depends on which side of each pair connects, so it can work on two nodes and hang on three.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-a", "arrived": true, "host_ips": ["10.0.0.1"]},
           {"rank": 1, "hostname": "node-b", "arrived": true, "host_ips": ["127.0.1.1"]}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-a", "arrived": true, "host_ips": ["10.0.0.1"]},
           {"rank": 1, "hostname": "node-b", "arrived": true, "host_ips": ["127.0.1.1"],
            "socket_ifname": {"GLOO_SOCKET_IFNAME": "ens5"}}]}
```
""",
)
