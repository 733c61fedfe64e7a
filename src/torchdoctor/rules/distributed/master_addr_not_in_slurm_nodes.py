"""TD714 master-addr-not-in-slurm-nodes."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD714",
    name="master-addr-not-in-slurm-nodes",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message="MASTER_ADDR={addr} is not a node of this SLURM job ({nodes}) (it resolves to {ips}): rank 0 hosts the store on {first}, the other ranks look for it elsewhere",
    hint='Set MASTER_ADDR from the job\'s own node list in the sbatch script, before srun: `export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)`.',
    doc="""
## What it does
In an srun step, compares `MASTER_ADDR` with the job's nodes (`SLURM_STEP_NODELIST`, or
`SLURM_JOB_NODELIST`, expanded from SLURM's compressed form such as `gpu[01-04]`): by name, and
by address when the names differ (an alias on another network of the same node, such as
`gpu01-ib`, is one of the job's nodes).

## Why is this bad?
Task 0 runs on the first node of the job and hosts the rendezvous store there; every other task
connects to `MASTER_ADDR`. An address copied from an earlier job, the login node's name
(`$(hostname)` evaluated where `sbatch` was typed) or a hard-coded node makes every rank wait
for a store that is not there, until the rendezvous times out.

## Example
```json
{"mode": "launcher", "master_ips": ["10.0.0.3"], "master_resolves": true,
 "slurm_nodes": ["gpu01", "gpu02"], "slurm_node_ips": ["10.0.1.1", "10.0.1.2"],
 "launch": {"RANK": "0", "WORLD_SIZE": "16", "MASTER_ADDR": "login01", "MASTER_PORT": "29500",
            "SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "16"}}
```

Use instead:
```json
{"mode": "launcher", "master_ips": ["10.0.1.1"], "master_resolves": true,
 "slurm_nodes": ["gpu01", "gpu02"], "slurm_node_ips": ["10.0.1.1", "10.0.1.2"],
 "launch": {"RANK": "0", "WORLD_SIZE": "16", "MASTER_ADDR": "gpu01", "MASTER_PORT": "29500",
            "SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "16"}}
```
""",
)
