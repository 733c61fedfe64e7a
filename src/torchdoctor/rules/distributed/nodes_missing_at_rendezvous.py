"""TD464 nodes-missing-at-rendezvous."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD464",
    name="nodes-missing-at-rendezvous",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="run",
    message="torchrun's rendezvous at {endpoint} (run id `{run_id}`) timed out after {seconds} s: this node ({host}) waited for {nodes} and fewer joined, so no rank started",
    hint="Start torchrun on every node with the same --rdzv-endpoint, --rdzv-id and --nnodes (under SLURM one task per node: `srun --ntasks-per-node=1 torchrun ...`); check that every node reaches {endpoint} (`torchdoctor dist` on each node) and that none failed before starting torchrun.",
    doc="""
## What it does
Explains torchrun's `RendezvousTimeoutError`, which says nothing more than its name: the launcher
of this node waited at the rendezvous (`--rdzv-endpoint`, `--rdzv-id`) for the number of nodes
`--nnodes` asks for, and fewer came within the join timeout (`--rdzv-conf join_timeout=`, 600 s by
default). The finding names the endpoint, the run id, the nodes expected and how long it waited.

## Why is this bad?
No rank of the job ever starts: every node that did come waits the whole join timeout, then
fails with an exception without a message. The usual causes: a node that was never started (a
SLURM step with fewer tasks than nodes), one started with another `--rdzv-id` or endpoint (each
node its own `localhost`), a firewall between the nodes and the endpoint, or a node that failed
before it ran torchrun.

## Example
```python
# launch.py: the launcher of one node, waiting for a second node that nobody starts
from torch.distributed.run import main

main(["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
      "--rdzv-endpoint", "127.0.0.1:29517", "--rdzv-id", "job", "--rdzv-conf", "join_timeout=3",
      "--no-python", "true"])
```

Use instead:
```python
# launch.py: as many nodes as are started (or start the second node too)
from torch.distributed.run import main

main(["--nnodes", "1", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
      "--rdzv-endpoint", "127.0.0.1:29517", "--rdzv-id", "job", "--rdzv-conf", "join_timeout=3",
      "--no-python", "true"])
```
""",
)
