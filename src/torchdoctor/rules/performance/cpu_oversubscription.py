"""TD615 cpu-oversubscription."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule

RULE = Rule(
    code="TD615",
    name="cpu-oversubscription",
    category=Category.PERFORMANCE,
    severity=Severity.WARNING,
    proof="env",
    message='{what} but this process may only use {cpus} CPU(s){why}: threads will fight for them',
    hint='Set OMP_NUM_THREADS={cpus} (or call torch.set_num_threads({cpus})) for this job; with several processes per machine, divide the CPUs between them.',
    doc="""
## What it does
Compares the number of threads torch will use for CPU work (`torch.get_num_threads()`, which
follows `OMP_NUM_THREADS`) with the CPUs this process may really use: its CPU affinity and its
cgroup CPU quota (a container's `--cpus`), not the machine's core count.

## Why is this bad?
More busy threads than CPUs make every CPU operation slower, often several times, through
context switches and OpenMP spin-waiting. Containers are the usual case: a quota of 4 CPUs on a
64-core host while torch starts one thread per host core.

## Example
```json
{"torch": {"importable": true, "num_threads": 32},
 "limits": {"cpus_online": 64, "cpus_affinity": 64, "cpu_quota": 4.0},
 "variables": {}}
```

Use instead:
```json
{"torch": {"importable": true, "num_threads": 4},
 "limits": {"cpus_online": 64, "cpus_affinity": 64, "cpu_quota": 4.0},
 "variables": {"OMP_NUM_THREADS": "4"}}
```
""",
)
