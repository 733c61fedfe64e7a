"""TD713 socket-interface-missing."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD713",
    name="socket-interface-missing",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message="{variable}={value} on {host}: {absent} {verb} not exist (interfaces: {interfaces})",
    variants={
        # NCCL_SOCKET_IFNAME's names are prefixes
        "no-prefix": Variant(message="{variable}={value} on {host}: no interface starts with {prefixes} (interfaces: {interfaces})"),
    },
    hint='Set {variable} to the interface that reaches the other nodes (see `ip -br addr`), or unset it to let the backend choose.',
    doc="""
## What it does
Checks `GLOO_SOCKET_IFNAME` (exact interface names) and `NCCL_SOCKET_IFNAME` (name prefixes, `=` for
exact names, `^` to exclude) against the network interfaces each rank's host really has.

## Why is this bad?
These variables are often copied from another cluster's instructions. Gloo fails to create its
process group, and NCCL falls back to no interface or hangs at its first collective.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "arrived": true, "interfaces": ["lo", "ens5"],
            "socket_ifname": {"GLOO_SOCKET_IFNAME": "eth0"}}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "arrived": true, "interfaces": ["lo", "ens5"],
            "socket_ifname": {"GLOO_SOCKET_IFNAME": "ens5", "NCCL_SOCKET_IFNAME": "ens"}}]}
```
""",
)
