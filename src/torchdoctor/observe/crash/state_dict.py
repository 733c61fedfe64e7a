"""A strict `load_state_dict` that raised "Error(s) in loading state_dict", explained from the
keys torch compared (the locals of its `load_state_dict` frame: `missing_keys`,
`unexpected_keys`, `error_msgs`, the mapping given): a prefix on either side, the weights
nested in a whole checkpoint, tensors of other shapes. Nothing is said when the keys show none
of these: the crash stays TD001."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torchdoctor.observe.crash.describe import torch_module
from torchdoctor.observe.crash.explain import Explanation
from torchdoctor.observe.crash.model import Crash
from torchdoctor.observe.state_keys import key_prefix
from torchdoctor.rules.api.state_dict_keys_mismatch import RULE

if TYPE_CHECKING:
    from torchdoctor.observe.observed import Holdings

#: the variant of a prefix whose origin is known
_ORIGINS = {"module.": "dataparallel", "_orig_mod.": "compiled"}
#: keys of a whole checkpoint looked at for the nested weights
NESTED_LOOKS = 32
#: tensors of other shapes named in the message, at most
SHAPES_NAMED = 2
_SIZE = re.compile(r"size mismatch for (?P<key>[\w.]+): copying a param with shape torch\.Size\(\[(?P<saved>[\d, ]*)\]\) "
                   r"from checkpoint, the shape in current model is torch\.Size\(\[(?P<model>[\d, ]*)\]\)")


def strict_load_refused(crash: Crash, session: Holdings | None) -> Explanation | None:
    if crash.exc_type != "RuntimeError" or "Error(s) in loading state_dict" not in crash.message:
        return None
    torch = torch_module()
    frame = next((f for f in reversed(crash.frames) if f.function == "load_state_dict" and "error_msgs" in f.locals), None)
    if torch is None or frame is None:
        return None
    found = frame.locals
    module, state = found.get("self"), found.get("state_dict")
    missing = [k for k in found.get("missing_keys") or () if isinstance(k, str)]
    unexpected = [k for k in found.get("unexpected_keys") or () if isinstance(k, str)]
    if not isinstance(module, torch.nn.Module):
        return None
    fields: dict[str, Any] = {"module": type(module).__name__}
    if missing and unexpected:
        return _keys_apart(fields, missing, unexpected, state)
    if not missing and not unexpected:
        return _sizes(fields, [str(m) for m in found.get("error_msgs") or ()])
    return None


def _keys_apart(fields: dict[str, Any], missing: list[str], unexpected: list[str], state: Any) -> Explanation | None:
    expected = set(missing)
    prefix = key_prefix(unexpected, expected)
    if prefix is not None:
        example = next(k for k in unexpected if k.startswith(prefix) and k[len(prefix):] in expected)
        given = len(state) if isinstance(state, Mapping) else len(unexpected)
        fields |= {"given": given, "example": example, "expected": example[len(prefix):]}
        variant = _ORIGINS.get(prefix)
        return Explanation(RULE, fields if variant else fields | {"prefix": prefix}, variant=variant)
    prefix = key_prefix(missing, set(unexpected))
    if prefix is not None and prefix[:-1].isidentifier():
        example = next(k for k in unexpected if prefix + k in expected)
        return Explanation(RULE, fields | {"prefix": prefix, "example": example, "expected": prefix + example,
                                           "inner": prefix[:-1]}, variant="wrapped-model")
    if isinstance(state, Mapping):
        for key in unexpected[:NESTED_LOOKS]:
            inner = state.get(key)
            if isinstance(inner, Mapping) and inner and 2 * len(expected & set(inner)) >= len(expected):
                keys = ", ".join(f"`{k}`" for k in list(state)[:4]) + (" ..." if len(state) > 4 else "")
                return Explanation(RULE, fields | {"keys": keys, "key": key}, variant="nested")
    return None


def _sizes(fields: dict[str, Any], messages: list[str]) -> Explanation | None:
    differ = [match for text in messages if (match := _SIZE.search(text)) is not None]
    if not differ:
        return None
    shapes = "; ".join(f"`{m['key']}` is [{m['saved']}] in the checkpoint, [{m['model']}] in the model" for m in differ[:SHAPES_NAMED])
    if len(differ) > SHAPES_NAMED:
        shapes += f"; and {len(differ) - SHAPES_NAMED} more"
    names = "{" + ", ".join(f'"{m["key"]}"' for m in differ) + "}"
    return Explanation(RULE, fields | {"count": len(differ), "shapes": shapes, "names": names}, variant="sizes")


def not_a_state_dict(crash: Crash, session: Holdings | None) -> Explanation | None:
    """"Expected state_dict to be dict-like": given a whole model, or the `state_dict` method."""
    if crash.exc_type != "TypeError" or "Expected state_dict to be dict-like" not in crash.message:
        return None
    torch = torch_module()
    frame = next((f for f in reversed(crash.frames) if f.function == "load_state_dict" and "state_dict" in f.locals), None)
    if torch is None or frame is None:
        return None
    given = frame.locals.get("state_dict")
    if isinstance(given, torch.nn.Module):
        return Explanation(RULE, {"got": type(given).__name__}, variant="whole-model")
    if callable(given) and getattr(given, "__name__", "") == "state_dict":
        return Explanation(RULE, {"got": f"{type(getattr(given, '__self__', None)).__name__}.state_dict"}, variant="method")
    return None


ORDER = 67
EXPLAINERS = (strict_load_refused, not_a_state_dict)
