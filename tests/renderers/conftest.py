import pytest

from torchdoctor.core import registry
from torchdoctor.core.finding import Severity
from torchdoctor.core.report import CheckResult, Report, Status


@pytest.fixture
def report() -> Report:
    report = Report(command="check")
    report.add(registry.get("TD101").finding(file="model.py", line=41, column=15,
                                             fields={"source": "softmax at model.py:40"}))
    report.add(registry.get("TD146").finding(fields={"what": "input x", "other": "the model", "consequence": "slow"}))
    report.add(registry.get("TD132").finding(file="m.py", line=3, fields={"name": "bn"}, severity=Severity.INFO))
    report.checks = [
        CheckResult("loss", "loss sanity", Status.FAILED, "softmax before CE", 0.01, ("TD101",)),
        CheckResult("dtype", "dtypes", Status.WARNED, "", 0.0, ("TD146",)),
        CheckResult("workers", "dataloader", Status.SKIPPED, "no DataLoader", 0.0, ("TD140",)),
        CheckResult("grad", "gradient flow", Status.PASSED, "", 0.0, ("TD120",)),
    ]
    return report
