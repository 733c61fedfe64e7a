"""TD427: `load_state_dict(state, strict=False)` that loaded none of the module's keys.

From what the call returns (torch 2.13: `_IncompatibleKeys(missing_keys, unexpected_keys)`)
and the keys of the mapping given: the module expected keys (`missing_keys` not empty), the
mapping had keys, and every one of them came back in `unexpected_keys`. A partial load (a
backbone into a model with a new head, pretrained embeddings only) matches some keys and is
left alone, as are an empty mapping and a module without state. Why nothing matched is
looked for in the keys: a prefix on the checkpoint's keys (`module.` from DataParallel/DDP,
`model.` from Lightning, `_orig_mod.` from torch.compile), the same prefix on the model's
(a wrapped model given its inner model's weights), or a whole checkpoint whose weights sit
under one of its keys.

The finding waits until the next optimizer step or the end of the run: a later load into the
same model (or a wrapper or a part of it) that does match keys means the program noticed and
retried, and the finding is dropped.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torch import nn

from torchdoctor.core.locate import caller_in_user_code
from torchdoctor.core.wording import listing
from torchdoctor.observe.detector import Detector
from torchdoctor.observe.events import Location, Step
from torchdoctor.observe.instruments.loading import StateLoad, StateLoads
from torchdoctor.observe.outcome import Outcome
from torchdoctor.observe.state_keys import key_prefix
from torchdoctor.rules.api.non_strict_load_matched_nothing import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Observed

#: where a prefix on every key usually comes from
ORIGINS = {
    "module.": "saved from `DataParallel`/`DistributedDataParallel`",
    "model.": "as a Lightning module holding `self.model` saves them",
    "_orig_mod.": "saved from a `torch.compile`d model",
}
#: unexpected keys looked at for a nested checkpoint (`{"state_dict": ..., "epoch": ...}`)
NESTED_LOOKS = 32


class LoadsMatchingNothing(Detector):
    ORDER = 350
    rules = (RULE,)

    def __init__(self, ctx: Observed) -> None:
        super().__init__(ctx)
        #: (pid, the module, the user's line, the finding's fields), reported unless a later load matches
        self._pending: list[tuple[int, weakref.ref[nn.Module], Location | None, dict[str, Any]]] = []

    def install(self) -> None:
        self.ctx.instrument(StateLoads).listen(self._loaded)

    def on_step(self, event: Step) -> None:
        if self._pending:
            self._flush()

    def on_finish(self, outcome: Outcome) -> None:
        self._flush()

    def _loaded(self, load: StateLoad) -> None:
        if self._pending and _loaded_something(load):
            self._forget(load.module)
        if load.strict:
            return
        keys = _nothing_matched(load)
        if keys is None:
            return
        missing, given = keys
        fields = _explain(missing, given, load.state)
        fields.update(module=type(load.module).__name__, expected=_keys(len(missing)), given=_keys(len(given)))
        self._pending.append((os.getpid(), weakref.ref(load.module), caller_in_user_code(), fields))

    def _forget(self, module: nn.Module) -> None:
        """A load into `module` matched keys: earlier empty loads into it, into a part of it or
        into a wrapper around it were retried."""
        def retried(ref: weakref.ref[nn.Module]) -> bool:
            earlier = ref()
            return earlier is not None and (
                earlier is module or any(m is earlier for m in module.modules()) or any(m is module for m in earlier.modules())
            )

        self._pending = [entry for entry in self._pending if not retried(entry[1])]

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for pid, _module, location, fields in pending:
            if pid == os.getpid():  # not in a forked DataLoader worker that inherited the list
                template = {k: v for k, v in fields.items() if k != "evidence"}
                self.ctx.report(RULE, at=location, fields=template, evidence=fields.get("evidence"))


def _keys_of(state: Any) -> list[Any] | None:
    return list(state.keys()) if isinstance(state, Mapping) else None


def _loaded_something(load: StateLoad) -> bool:
    given = _keys_of(load.state)
    unexpected = getattr(load.result, "unexpected_keys", None)
    if not given or unexpected is None:
        return False
    return bool(set(given) - set(unexpected))


def _nothing_matched(load: StateLoad) -> tuple[list[str], list[str]] | None:
    """(missing keys, keys given) when the module expected keys and none of those given matched."""
    missing = getattr(load.result, "missing_keys", None)
    unexpected = getattr(load.result, "unexpected_keys", None)
    given = _keys_of(load.state)
    if not missing or not unexpected or not given or not isinstance(missing, list) or not isinstance(unexpected, list):
        return None
    if set(given) - set(unexpected):
        return None
    return [k for k in missing if isinstance(k, str)], [k for k in given if isinstance(k, str)]


def _some(keys: list[str]) -> str:
    return ", ".join(f"`{k}`" for k in keys[:3])


def _keys(n: int) -> str:
    return f"{n} key{'s' if n != 1 else ''}"


def _explain(missing: list[str], given: list[str], state: Any) -> dict[str, Any]:
    """`why` (words after "the N keys given"), `remedy` (the hint's first sentence), `evidence`."""
    expected = set(missing)
    evidence: dict[str, Any] = {"missing": missing[:5], "unexpected": given[:5]}
    prefix = key_prefix(given, expected)
    if prefix is not None:
        origin = ORIGINS.get(prefix)
        evidence["checkpoint_prefix"] = prefix
        return {
            "why": f", which are the model's keys with a `{prefix}` prefix{f' ({origin})' if origin else ''}",
            "remedy": f'Strip the prefix: `model.load_state_dict({{k.removeprefix("{prefix}"): v for k, v in state.items()}})`.',
            "evidence": evidence,
        }
    prefix = key_prefix(missing, set(given))
    if prefix is not None:
        evidence["model_prefix"] = prefix
        inner = prefix[:-1]
        return {
            "why": f", which are the model's keys without its `{prefix}` prefix (the model is a wrapper around the one that was saved)",
            "remedy": f"Load into the wrapped model: `model.{inner}.load_state_dict(state)`."
            if inner.isidentifier() else f'Add the prefix: `{{"{prefix}" + k: v for k, v in state.items()}}`.',
            "evidence": evidence,
        }
    if isinstance(state, dict):
        for key in given[:NESTED_LOOKS]:
            inner_state = state.get(key)
            if not isinstance(inner_state, Mapping) or not inner_state:
                continue
            inner_keys = [k for k in inner_state if isinstance(k, str)]
            where = f'state["{key}"]'
            if len(expected & set(inner_keys)) * 2 >= len(expected):
                evidence["nested_under"] = key
                return {
                    "why": f" ({listing([f'`{k}`' for k in given])}): the weights are under `{where}`",
                    "remedy": f"Load the weights themselves: `model.load_state_dict({where})`.",
                    "evidence": evidence,
                }
            prefix = key_prefix(inner_keys, expected)
            if prefix is not None:
                evidence.update(nested_under=key, checkpoint_prefix=prefix)
                return {
                    "why": f" ({listing([f'`{k}`' for k in given])}): the weights are under `{where}`, with a `{prefix}` prefix",
                    "remedy": f"Load the weights themselves, without the prefix: "
                    f'`model.load_state_dict({{k.removeprefix("{prefix}"): v for k, v in {where}.items()}})`.',
                    "evidence": evidence,
                }
    return {
        "why": f" (such as {_some(given)}; the model's are like {_some(missing)})",
        "remedy": "Map the checkpoint's keys onto the model's (compare `state.keys()` with `model.state_dict().keys()`).",
        "evidence": evidence,
    }
