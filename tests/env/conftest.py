from __future__ import annotations

import json
from typing import Any

import pytest

from torchdoctor.env.facts import EnvFacts, from_dict
from torchdoctor.env.verdicts import judge


def facts_of(**groups: Any) -> EnvFacts:
    """EnvFacts from partial JSON-like groups (everything left out is "not collected")."""
    return from_dict(EnvFacts, json.loads(json.dumps(groups)))


def codes(**groups: Any) -> list[str]:
    return sorted(f.rule for f in judge(facts_of(**groups)))


CUDA_TORCH = {"importable": True, "version": "2.5.1+cu124", "cuda": "12.4", "cuda_available": True,
              "arch_list": ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"],
              "cuda_releases": ["11.8", "12.1", "12.4"],
              "path": "/opt/venv/lib/python3.11/site-packages/torch"}
A100 = {"index": 0, "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0", "memory_mib": 81920}


@pytest.fixture
def cuda_torch() -> dict[str, Any]:
    return dict(CUDA_TORCH)
