"""TD701 loopback-master-addr-multi-node."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD701",
    name="loopback-master-addr-multi-node",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='MASTER_ADDR={addr} resolves to {ips} (this host) but the job spans several hosts (WORLD_SIZE={world}, LOCAL_WORLD_SIZE={local_world})',
    hint='Set MASTER_ADDR to an address of the node that runs rank 0 that every node can reach (its hostname or IP on the cluster network), the same on every node.',
    doc="""
## What it does
Flags a `MASTER_ADDR` that resolves to a loopback address (`localhost`, `127.0.0.1`, `::1`) in a job
with ranks on more than one host.

## Why is this bad?
Every node then looks for the rendezvous store on itself. The ranks of other nodes never reach
rank 0, and the job waits until the rendezvous timeout; if each node also uses its own port,
several jobs may even form by accident.

## Example
```json
{"mode": "launcher", "master_ips": ["127.0.0.1"], "master_resolves": true,
 "launch": {"RANK": "0", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "localhost", "MASTER_PORT": "29500"}}
```

Use instead:
```json
{"mode": "launcher", "master_ips": ["10.1.0.7"], "master_resolves": true,
 "launch": {"RANK": "0", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8", "MASTER_ADDR": "node-0", "MASTER_PORT": "29500"}}
```
""",
)
