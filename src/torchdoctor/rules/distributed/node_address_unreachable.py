"""TD718 node-address-unreachable."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

_MESSAGE = "{{who}} could not reach {{target}} at {{address}}, the address {{via}} picks there: {problem}"
#: what a connection attempt ran into -> what it means
_PROBLEMS = {
    "refused": "the connection was refused (nothing listens there: the address of another machine, or a loopback one)",
    "timeout": "no answer within 2 s (a firewall drops the packets, or the address is not routed)",
    "unreachable": "there is no route to it from there",
    "unresolvable": "it does not resolve",
}

RULE = Rule(
    code="TD718",
    name="node-address-unreachable",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message=_MESSAGE.format(problem="{problem}"),
    variants={
        # what the attempt ran into, of the kinds known (the message above quotes any other as it came)
        kind: Variant(message=_MESSAGE.format(problem=problem)) for kind, problem in _PROBLEMS.items()
    },
    hint="Make that address reachable from every node (routes, firewall, security group), or choose the interface that connects the nodes: GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME naming it on every node (see `ip -br addr` and `ip route get` to the other nodes).",
    doc="""
## What it does
Once the ranks have met at the store, one rank per node listens on the address each backend
would use there (the interface `GLOO_SOCKET_IFNAME` or `NCCL_SOCKET_IFNAME` names, or for gloo
without it the address the host name resolves to), and every node tries to connect to every
other node's, with a short timeout. Connections that fail are reported with why: refused,
timed out, or no route.

## Why is this bad?
Reaching the store proves only that `MASTER_ADDR` is reachable. The ranks then connect to each
other directly on these addresses: an interface that exists but does not route to the other
nodes (a management network, a second NIC without a route, an address behind a firewall) makes
`init_process_group` or the first collective hang until the timeout.

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-a", "arrived": true,
            "probes": [{"via": "GLOO_SOCKET_IFNAME=eth1", "address": "10.99.0.1:41000"}],
            "reach": [{"to": 1, "via": "GLOO_SOCKET_IFNAME=eth1", "address": "10.99.0.2:41200", "problem": "unreachable"}]},
           {"rank": 1, "hostname": "node-b", "arrived": true,
            "probes": [{"via": "GLOO_SOCKET_IFNAME=eth1", "address": "10.99.0.2:41200"}],
            "reach": [{"to": 0, "via": "GLOO_SOCKET_IFNAME=eth1", "address": "10.99.0.1:41000", "problem": "unreachable"}]}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-a", "arrived": true,
            "probes": [{"via": "GLOO_SOCKET_IFNAME=eth0", "address": "10.0.0.1:41000"}],
            "reach": [{"to": 1, "via": "GLOO_SOCKET_IFNAME=eth0", "address": "10.0.0.2:41200", "problem": null}]},
           {"rank": 1, "hostname": "node-b", "arrived": true,
            "probes": [{"via": "GLOO_SOCKET_IFNAME=eth0", "address": "10.0.0.2:41200"}],
            "reach": [{"to": 0, "via": "GLOO_SOCKET_IFNAME=eth0", "address": "10.0.0.1:41000", "problem": null}]}]}
```
""",
)
