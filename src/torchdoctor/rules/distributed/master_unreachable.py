"""TD703 master-unreachable."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD703",
    name="master-unreachable",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='rank {rank_} on {host} {error}',
    hint='Check that rank 0 runs and listens on MASTER_ADDR:MASTER_PORT, that every rank uses the same two values, and that the port is open between the nodes (firewall, security group); on a multi-homed node set GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME to the interface that reaches the others.',
    doc="""
## What it does
Every rank other than the store's host connects to `MASTER_ADDR:MASTER_PORT` with short attempts
until the rendezvous deadline, and says why it could not: connection refused (nothing listens),
timed out (a firewall or a wrong address drops the packets), no route, or a name that does not
resolve.

## Why is this bad?
torch's own client retries silently and then says only "The client socket has timed out after
...ms while trying to connect to (host, port)", after the full timeout; the cause stays unknown.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 1, "hostname": "node-1", "master": "10.0.0.1:29500", "connect": "refused",
            "store_error": "could not reach the store at 10.0.0.1:29500 within 12 s: the connection was refused: nothing listens there"}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 1, "hostname": "node-1", "master": "10.0.0.1:29500", "arrived": true}]}
```
""",
)
