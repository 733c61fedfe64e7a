"""TD710 gpu-shared-by-ranks."""

from torchdoctor.core.finding import Category, Severity
from torchdoctor.core.rule import Rule, Variant

RULE = Rule(
    code="TD710",
    name="gpu-shared-by-ranks",
    category=Category.DISTRIBUTED,
    severity=Severity.ERROR,
    proof="dist",
    message="{ranks} on {host} would all use the same GPU ({device})",
    variants={
        # LOCAL_RANK names a GPU the rank does not see
        "no-such-gpu": Variant(message="rank {rank} has LOCAL_RANK={local} but sees only {gpus} GPUs: cuda:{local} does not exist"),
    },
    hint="Call `torch.cuda.set_device(int(os.environ['LOCAL_RANK']))` before `init_process_group` (or pass `device_id=`), and give each process on a host its own GPU (do not set CUDA_VISIBLE_DEVICES to the same GPU for every rank).",
    doc="""
## What it does
Works out which GPU each rank would use (`cuda:LOCAL_RANK` among the GPUs it sees) and flags ranks
on one host that land on the same physical GPU, or a `LOCAL_RANK` beyond the GPUs the rank sees.

## Why is this bad?
NCCL refuses two ranks on one GPU ("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device
..."); without NCCL they share its memory and compute, and GPU 0 runs out of memory while the
others idle. A local rank beyond the visible GPUs fails with "invalid device ordinal".

## Example
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "local_rank": 0, "gpu_count": 1, "device": "GPU-5c1e27a0", "arrived": true},
           {"rank": 1, "hostname": "node-0", "local_rank": 1, "gpu_count": 1, "device": "GPU-5c1e27a0", "arrived": true}]}
```

Use instead:
```json
{"mode": "launcher", "world_size": 2,
 "ranks": [{"rank": 0, "hostname": "node-0", "local_rank": 0, "gpu_count": 2, "device": "GPU-5c1e27a0", "arrived": true},
           {"rank": 1, "hostname": "node-0", "local_rank": 1, "gpu_count": 2, "device": "GPU-9a4b0c11", "arrived": true}]}
```
""",
)
