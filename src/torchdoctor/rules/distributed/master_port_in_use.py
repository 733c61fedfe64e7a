"""TD702 master-port-in-use."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD702",
    name="master-port-in-use",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message='rank 0 cannot host the rendezvous store on {master}: the port is already in use on {host} ({error})',
    hint='Pick a free port (`MASTER_PORT=$(python -c \'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])\')`, the same on every rank), or stop the job or stale process that holds it (`ss -ltnp | grep :PORT`).',
    doc="""
## What it does
Rank 0 starts the TCP store at `MASTER_ADDR:MASTER_PORT` exactly as `env://` does, and reports
when the port is taken (`EADDRINUSE`).

## Why is this bad?
torch raises "DistNetworkError: The server socket has failed to listen on any local network
address. port: 29500 ... name: EADDRINUSE" on rank 0, while the other ranks may connect to
whatever holds the port (often a previous run that has not exited) and wait there.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "master": "10.0.0.1:29500", "connect": "in use",
            "store_error": "DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use"}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "master": "10.0.0.1:29501", "arrived": true}]}
```
""",
)
