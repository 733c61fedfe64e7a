"""The NVIDIA driver's view of the machine, from nvidia-smi: it does not need torch to work."""

from __future__ import annotations

import re

from torchdoctor.env.facts import Gpu, NvidiaFacts
from torchdoctor.env.runner import Host

QUERY = "index,name,compute_cap,memory.total,driver_version"
#: for drivers whose nvidia-smi does not know `compute_cap`
QUERY_WITHOUT_CAPABILITY = "index,name,memory.total,driver_version"


def nvidia_facts(host: Host) -> NvidiaFacts:
    nodes = host.exists("/dev/nvidia0") or host.exists("/proc/driver/nvidia/version")
    smi = host.which("nvidia-smi")
    if smi is None:
        return NvidiaFacts(device_nodes=nodes)
    listing = host.run([smi, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"], 15.0)
    if listing is not None and not listing.timed_out and listing.returncode != 0 and "compute_cap" in listing.stdout + listing.stderr:
        listing = host.run([smi, f"--query-gpu={QUERY_WITHOUT_CAPABILITY}", "--format=csv,noheader,nounits"], 15.0)
    if listing is None or listing.timed_out or listing.returncode != 0:
        said = (listing.stdout + listing.stderr).strip() if listing else "could not run"
        return NvidiaFacts(smi=smi, error=" ".join(said.split())[:300] or "nvidia-smi failed", device_nodes=nodes)
    gpus, driver = parse_query(listing.stdout)
    return NvidiaFacts(
        smi=smi, driver=driver, driver_cuda=driver_cuda_version(host.output([smi]) or ""), gpus=gpus,
        device_nodes=nodes,
    )


def parse_query(text: str) -> tuple[list[Gpu], str | None]:
    """Rows of `nvidia-smi --query-gpu=QUERY` (with or without the compute_cap column)."""
    gpus: list[Gpu] = []
    driver = None
    for row in text.strip().splitlines():
        cells = [c.strip() for c in row.split(",")]
        if len(cells) == 4:
            cells.insert(2, "")
        if len(cells) != 5:
            continue
        index, name, capability, memory, driver = cells
        gpus.append(Gpu(
            index=int(index) if index.isdigit() else None,
            name=name,
            capability=capability if re.fullmatch(r"\d+\.\d+", capability) else None,
            memory_mib=int(float(memory)) if re.fullmatch(r"[\d.]+", memory) else None,
        ))
    return gpus, driver


def driver_cuda_version(banner: str) -> str | None:
    """The "CUDA Version: 12.4" of nvidia-smi's banner: the newest CUDA this driver supports."""
    match = re.search(r"CUDA Version\s*:\s*(\d+\.\d+)", banner)
    return match.group(1) if match else None
