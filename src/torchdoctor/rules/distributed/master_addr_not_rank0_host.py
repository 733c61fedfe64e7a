"""TD717 master-addr-not-rank0-host."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD717",
    name="master-addr-not-rank0-host",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message="MASTER_ADDR={addr} resolves to {ips} on {host}, where rank 0 runs, and none of them is an address of {host} ({local}): the store is hosted here, the other ranks look for it there",
    variants={
        # rank 0's host has no address but loopback ones
        "loopback-only": Variant(message="MASTER_ADDR={addr} resolves to {ips} on {host}, where rank 0 runs, and none of them is an address of {host} (none but loopback): the store is hosted here, the other ranks look for it there"),
    },
    hint="Set MASTER_ADDR to the node that runs rank 0 (its name, or an address it has), the same on every node; if the name resolves differently there, fix /etc/hosts or DNS.",
    doc="""
## What it does
The rendezvous store is hosted on the node of rank 0 (by rank 0 itself, or by torchrun's agent
there), and every other rank connects to `MASTER_ADDR`. The preflight resolves `MASTER_ADDR` on
rank 0's node and compares the result with every address that node has.

## Why is this bad?
A `MASTER_ADDR` that names another machine (a stale /etc/hosts entry, a DNS record of a
previous node, a variable copied from another job) sends every other rank to the wrong place:
they fail to connect, or they join another job's store on the same port.

## Example
```json
{"mode": "launcher", "world_size": 2, "launch": {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "node-a", "MASTER_PORT": "29500"},
 "ranks": [{"rank": 0, "hostname": "node-a", "arrived": true, "master_resolved": ["10.0.0.9"],
            "local_ips": ["10.0.0.1", "127.0.0.1"]}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2, "launch": {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "node-a", "MASTER_PORT": "29500"},
 "ranks": [{"rank": 0, "hostname": "node-a", "arrived": true, "master_resolved": ["10.0.0.1"],
            "local_ips": ["10.0.0.1", "127.0.0.1"]}]}
```
""",
)
