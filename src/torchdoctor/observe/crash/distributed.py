"""Crashes of torch.distributed: DDP's unused-parameter error (TD463), a collective that
failed because the other ranks never joined it (TD462), and torchrun's rendezvous that timed out
waiting for the other nodes (TD464).

No torch import here: what is read comes from the crash's live frames and the session.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.ddp_parameters import checked_parameters, unused_fields
from torchdoctor.rules.distributed.collective_timed_out import RULE as TIMED_OUT
from torchdoctor.rules.distributed.ddp_unused_parameters import RULE as UNUSED
from torchdoctor.rules.distributed.nodes_missing_at_rendezvous import RULE as RENDEZVOUS

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

_UNFINISHED = "Expected to have finished reduction in the prior iteration"
_INDICES = re.compile(r"Parameter indices which did not receive grad for rank \d+: (?P<indices>[\d ]+)")
_GLOO_TIMEOUT = re.compile(r"Timed out waiting (?P<ms>\d+)ms for (?P<what>\w+) operation")
_PEER_GONE = ("Connection closed by peer", "Connection reset by peer")
#: the module whose functions are the collectives (their names are the operations)
_C10D = "distributed_c10d.py"


def ddp_unused_parameters(crash: Crash, session: Observed | None) -> Explanation | None:
    if _UNFINISHED not in crash.message:
        return None
    torch = torch_module()
    ddp = crash.find_local(torch.nn.parallel.DistributedDataParallel, "self") if torch is not None else None
    indices = _INDICES.search(crash.message)
    names: list[str] = []
    if ddp is not None and indices is not None:
        params = checked_parameters(ddp)
        names = [params[int(i)][0] for i in indices["indices"].split() if int(i) < len(params)]
    index = _index(session)
    at = index.ddp.get(ddp) if index is not None and ddp is not None else None
    if not names:
        fields = {"count": "some", "names": "DDP did not say which (set TORCH_DISTRIBUTED_DEBUG=DETAIL to have them named)"}
    else:
        fields = unused_fields(names)
    return Explanation(UNUSED, fields, at=at, evidence={"parameters": names} if names else None)


def collective_failed(crash: Crash, session: Observed | None) -> Explanation | None:
    """gloo's timeout, or a peer that went away, inside a collective the program called."""
    timeout = _GLOO_TIMEOUT.search(crash.message)
    gone = any(text in crash.message for text in _PEER_GONE)
    if timeout is None and not gone:
        return None
    op = next((frame.function for frame in crash.deepest() if frame.file.endswith(_C10D) and frame.function != "wrapper"), None)
    if op is None:
        return None
    # how it failed, as facts: the seconds waited (the process group's timeout), or the peer gone
    waited = {"seconds": int(timeout["ms"]) / 1000} if timeout is not None else {}
    evidence: dict[str, Any] = {"op": op, **waited, "peer_gone": timeout is None}
    index = _index(session)
    if index is not None and len(index.calls):
        evidence["call"] = len(index.calls) - 1
    return Explanation(TIMED_OUT, {"op": op, **waited, "others": ""}, evidence=evidence,
                       variant=None if timeout is not None else "peer-gone")


def rendezvous_timed_out(crash: Crash, session: Observed | None) -> Explanation | None:
    """torchrun's launcher (this process) gave up waiting for the other nodes at its rendezvous.
    What it waited for is read off the launcher's own live frames: its launch configuration and
    its rendezvous settings (what torch prints is the exception's bare name)."""
    if crash.exc_type != "RendezvousTimeoutError":
        return None
    config: Any = None
    settings: Any = None
    node: Any = None
    for frame in crash.deepest():
        scope = frame.locals
        owner: Any = scope.get("self")
        if settings is None and hasattr(owner, "_settings") and hasattr(owner, "_node"):
            settings, node = owner._settings, owner._node
        if config is None and hasattr(scope.get("config"), "rdzv_endpoint"):
            config = scope["config"]
    low, high = getattr(config, "min_nodes", None), getattr(config, "max_nodes", None)
    nodes = f"{low} nodes (--nnodes {low})" if low == high and low else f"{low} to {high} nodes (--nnodes {low}:{high})" if low else "the other nodes"
    join = getattr(getattr(settings, "timeout", None), "join", None)
    fields = {
        "endpoint": getattr(config, "rdzv_endpoint", None) or "its endpoint", "run_id": getattr(settings, "run_id", None) or getattr(config, "run_id", "?"),
        "seconds": f"{join.total_seconds():g}" if join is not None else "its join timeout", "host": getattr(node, "addr", None) or "?", "nodes": nodes,
    }
    return Explanation(RENDEZVOUS, fields, evidence={"endpoint": fields["endpoint"], "min_nodes": low, "max_nodes": high})


def _index(session: Observed | None) -> Any:
    """The session's record of torch.distributed (instruments/distributed.py), if it has one."""
    if session is None or torch_module() is None:
        return None
    from torchdoctor.observe.instruments.distributed import DistributedIndex

    return session.installed(DistributedIndex)


#: where these explainers are tried: lower first (core/plugins.py)
ORDER = 30
EXPLAINERS = (ddp_unused_parameters, collective_failed, rendezvous_timed_out)
