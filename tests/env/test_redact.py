from __future__ import annotations

from torchdoctor.env.probes.system import relevant_variables
from torchdoctor.env.redact import MASK, redact_text, redact_variable


def test_secret_names_are_masked_whatever_the_value() -> None:
    for name in ("HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "MASTER_PASSWORD", "NCCL_AUTH",
                 "TORCH_HUB_TOKEN", "SSH_KEY", "DB_PWD", "GCP_CREDENTIALS"):
        assert redact_variable(name, "value-1234") == MASK, name


def test_ordinary_values_stay() -> None:
    for name, value in (("NCCL_IB_HCA", "mlx5_0"), ("MASTER_ADDR", "10.0.0.1"), ("KEYBOARD", "us"),
                        ("TORCHELASTIC_RUN_ID", "d4bdc2ae-4193-42e7-958b-108a4697f001"), ("CUDA_HOME", "/usr/local/cuda")):
        assert redact_variable(name, value) == value


def test_credentials_inside_values() -> None:
    assert redact_text("https://bob:hunter2@example.com/x") == f"https://bob:{MASK}@example.com/x"
    assert redact_text("use hf_abcdefghijklmnopqrstuvwx now") == f"use {MASK} now"
    assert redact_text("ghp_" + "a" * 36) == MASK
    assert redact_text("AKIAABCDEFGHIJKLMNOP") == MASK
    assert redact_text("/usr/lib:/opt/cuda/lib64") == "/usr/lib:/opt/cuda/lib64"


def test_relevant_variables_are_chosen_and_redacted() -> None:
    environ = {"NCCL_DEBUG": "INFO", "HOME": "/root", "TORCH_HUB_TOKEN": "s3cret", "RANK": "0",
               "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "HF_TOKEN": "hf_x"}
    assert relevant_variables(environ) == {
        "NCCL_DEBUG": "INFO", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "RANK": "0",
        "TORCH_HUB_TOKEN": MASK,
    }
