"""Mutation operators: each puts one bug users really make into a correct training program.

An operator reads the program's AST and yields the places it can change, each as a text edit
on the source (so comments, layout and every other line stay as they were, and the mutated
line is a line of the file that is run). Edits keep the line numbering where they can: a
deleted statement becomes `pass`, a statement added next to another goes on its line after
`;`. Where a line must be added (`@torch.no_grad()` above a `def`, a statement at the top of a
loop body) the mutation says so, and the bench shifts the baseline's lines past it.

`mutants(source, operator)` gives the mutations of one operator, in source order. The
operators are kinds, not examples: each matches the shapes of code the kind takes (names
resolved by how values are made, not by what they are called) and skips places where the
change would not be a bug (dropping `model.train()` in a program that never calls `eval()`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    operator: str
    lines: tuple[int, ...]    # the lines that differ from the original, in the mutated source
    source: str               # the whole mutated source
    before: str               # the changed text before ...
    after: str                # ... and after
    inserted: int | None = None   # a line added at this number (lines from here on moved down by one)


@dataclass(frozen=True)
class Operator:
    name: str
    categories: frozenset[str]   # a finding of one of these categories detects the mutant
    bug: str                     # the bug, in one line
    pain: str                    # the pain-points.md row(s) or the source of the kind
    find: Callable[[Src], Iterator[Edit]]


@dataclass(frozen=True)
class Edit:
    start: tuple[int, int]    # (line, column in characters) of the replaced span
    end: tuple[int, int]
    text: str
    inserted: int | None = None


OPERATORS: dict[str, Operator] = {}


def operator(name: str, categories: str, bug: str, pain: str = ""):
    def register(find):
        OPERATORS[name] = Operator(name, frozenset(categories.split()), bug, pain, find)
        return find
    return register


# --- reading the source ------------------------------------------------------------------------

OPTIMIZERS = {"SGD", "Adam", "AdamW", "Adadelta", "Adagrad", "RMSprop", "Adamax", "NAdam", "RAdam",
              "LBFGS", "SparseAdam", "ASGD", "Rprop"}
ELEMENTWISE_LOSSES = {"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "MSELoss", "L1Loss",
                      "SmoothL1Loss", "HuberLoss"}
CLASS_LOSSES = {"cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss"}
SAVES_OUTPUT = {"sigmoid", "tanh", "exp", "softmax", "log_softmax", "relu"}


class Src:
    """The source text, its tree, parents and the helpers operators share."""

    def __init__(self, source: str, project: str = ""):
        self.text = source
        self.project = project     # the text of the program's other files
        self.lines = source.splitlines(keepends=True)
        self.tree = ast.parse(source)
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        self.criteria = self._criteria()

    # text
    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""

    def col(self, line: int, byte_col: int) -> int:
        return len(self.lines[line - 1].encode()[:byte_col].decode(errors="replace"))

    def start(self, node: ast.AST) -> tuple[int, int]:
        return node.lineno, self.col(node.lineno, node.col_offset)

    def end(self, node: ast.AST) -> tuple[int, int]:
        return node.end_lineno, self.col(node.end_lineno, node.end_col_offset)

    def indent(self, node: ast.AST) -> str:
        line = self.lines[node.lineno - 1]
        return line[: len(line) - len(line.lstrip())]

    # edits
    def replace(self, node: ast.AST, text: str) -> Edit:
        return Edit(self.start(node), self.end(node), text)

    def delete(self, stmt: ast.stmt) -> Edit:
        """The statement becomes `pass` (its other lines blank), so no line moves."""
        return Edit(self.start(stmt), self.end(stmt), "pass" + "\n" * (stmt.end_lineno - stmt.lineno))

    def after(self, stmt: ast.stmt, text: str) -> Edit:
        """`text` run right after `stmt`, on its last line."""
        at = self.end(stmt)
        return Edit(at, at, f"; {text}")

    def before(self, stmt: ast.stmt, text: str) -> Edit:
        at = self.start(stmt)
        return Edit(at, at, f"{text}; ")

    def line_before(self, stmt: ast.stmt, text: str) -> Edit:
        at = (stmt.lineno, 0)
        return Edit(at, at, f"{self.indent(stmt)}{text}\n", inserted=stmt.lineno)

    # structure
    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parent:
            node = self.parent[node]
            yield node

    def function_of(self, node: ast.AST) -> ast.AST:
        for a in self.ancestors(node):
            if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return a
        return self.tree

    def class_of(self, node: ast.AST) -> ast.ClassDef | None:
        for a in self.ancestors(node):
            if isinstance(a, ast.ClassDef):
                return a
        return None

    def loop_of(self, node: ast.AST) -> ast.AST | None:
        for a in self.ancestors(node):
            if isinstance(a, (ast.For, ast.While)):
                return a
            if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                return None
        return None

    def walk_scope(self, scope: ast.AST) -> Iterator[ast.AST]:
        """The nodes of a function (or the module), not those of functions and classes inside it."""
        todo = list(ast.iter_child_nodes(scope))
        while todo:
            node = todo.pop(0)
            yield node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo[:0] = list(ast.iter_child_nodes(node))

    def calls(self, scope: ast.AST | None = None, name: str | None = None) -> Iterator[ast.Call]:
        nodes = ast.walk(self.tree) if scope is None else self.walk_scope(scope)
        for node in nodes:
            if isinstance(node, ast.Call) and (name is None or callee(node) == name):
                yield node

    def statements(self, pred: Callable[[ast.stmt], bool]) -> Iterator[ast.stmt]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.stmt) and pred(node):
                yield node

    def trains(self, scope: ast.AST) -> bool:
        """The function (or module) calls backward() itself."""
        return any(callee(c) == "backward" for c in self.calls(scope))

    def in_forward(self, node: ast.AST) -> bool:
        fn = self.function_of(node)
        cls = self.class_of(node)
        return isinstance(fn, ast.FunctionDef) and cls is not None and is_module_class(cls) and (
            fn.name == "forward" or fn.name in self.called_from_forward(cls))

    def called_from_forward(self, cls: ast.ClassDef) -> set[str]:
        forward = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
        if forward is None:
            return set()
        return {c.func.attr for c in ast.walk(forward) if isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
                and c.func.value.id == "self"}

    def _criteria(self) -> dict[str, str]:
        """Names (`criterion`, `self.loss_fn`) bound to an nn loss object: name -> the loss class."""
        found = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                name = callee(node.value)
                if name and name.endswith("Loss"):
                    for target in node.targets:
                        found[self.segment(target)] = name
        return found

    def loss_call(self, call: ast.Call) -> str | None:
        """The loss a call computes (`cross_entropy`, `CrossEntropyLoss`, ...), or None."""
        name = callee(call)
        if name in CLASS_LOSSES | ELEMENTWISE_LOSSES | {"binary_cross_entropy", "binary_cross_entropy_with_logits"}:
            return name
        if self.segment(call.func) in self.criteria:
            return self.criteria[self.segment(call.func)]
        return None

    def mentions(self, *words: str) -> bool:
        return any(w in self.text for w in words)


def callee(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def receiver(call: ast.Call) -> ast.expr | None:
    return call.func.value if isinstance(call.func, ast.Attribute) else None


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def is_module_class(cls: ast.ClassDef) -> bool:
    return any((isinstance(b, ast.Attribute) and b.attr == "Module") or (isinstance(b, ast.Name) and b.id == "Module")
               for b in cls.bases)


def expr_call(stmt: ast.stmt, name: str) -> ast.Call | None:
    """The call of method/function `name` that the statement consists of (`optimizer.step()`)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and callee(stmt.value) == name:
        return stmt.value
    return None


def is_optimizer_ctor(call: ast.Call) -> bool:
    return callee(call) in OPTIMIZERS


def looks_like_optimizer(expr: ast.expr | None) -> bool:
    text = ast.unparse(expr) if expr is not None else ""
    last = text.rsplit(".", 1)[-1].lower()
    return "optim" in last or last in {"opt", "d_opt", "g_opt"} or last.endswith("_opt") or last.startswith("opt")


def block_of(src: Src, stmt: ast.stmt) -> list[ast.stmt] | None:
    parent = src.parent.get(stmt)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and stmt in block:
            return block
    return None


def later_in_block(src: Src, stmt: ast.stmt, pred: Callable[[ast.stmt], bool]) -> ast.stmt | None:
    block = block_of(src, stmt) or []
    seen = False
    for other in block:
        if other is stmt:
            seen = True
        elif seen and pred(other):
            return other
    return None


def is_backward(stmt: ast.stmt) -> bool:
    return expr_call(stmt, "backward") is not None


def is_step(stmt: ast.stmt) -> bool:
    call = expr_call(stmt, "step")
    return call is not None and looks_like_optimizer(receiver(call))


def is_zero_grad(stmt: ast.stmt) -> bool:
    return expr_call(stmt, "zero_grad") is not None


def is_clip(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and callee(stmt.value) in {
        "clip_grad_norm_", "clip_grad_value_"}


def backward_loss_names(src: Src, scope: ast.AST) -> set[str]:
    """Names whose `.backward()` the scope calls (`loss`, `d_loss`)."""
    names = set()
    for call in src.calls(scope, "backward"):
        rec = receiver(call)
        if isinstance(rec, ast.Name):
            names.add(rec.id)
    return names


def last_assignment(src: Src, scope: ast.AST, name: str, before: int) -> ast.Assign | None:
    found = None
    for node in src.walk_scope(scope):
        if (isinstance(node, ast.Assign) and node.lineno < before and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
            if found is None or node.lineno > found.lineno:
                found = node
    return found


def training_scopes(src: Src) -> list[ast.AST]:
    scopes = [f for f in ast.walk(src.tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [s for s in [src.tree, *scopes] if src.trains(s)]


# --- the optimizer and the training step -------------------------------------------------------

@operator("drop_zero_grad", "optimizer", "the gradient reset of a training step is missing", "A1")
def drop_zero_grad(src: Src):
    for stmt in src.statements(is_zero_grad):
        yield src.delete(stmt)


@operator("zero_grad_after_backward", "optimizer", "`zero_grad()` moved between `backward()` and `step()`", "A1")
def zero_grad_after_backward(src: Src):
    for stmt in src.statements(is_zero_grad):
        backward = later_in_block(src, stmt, is_backward)
        if backward is not None:
            between = _text_between(src, src.end(stmt), src.start(backward))
            yield Edit(src.start(stmt), src.end(backward),
                       f"pass{between}{src.segment(backward)}; {src.segment(stmt)}")


def _text_between(src: Src, a: tuple[int, int], b: tuple[int, int]) -> str:
    (la, ca), (lb, cb) = a, b
    if la == lb:
        return src.lines[la - 1][ca:cb]
    parts = [src.lines[la - 1][ca:]] + src.lines[la:lb - 1] + [src.lines[lb - 1][:cb]]
    return "".join(parts)


@operator("drop_step", "optimizer", "the optimizer is never stepped", "A1")
def drop_step(src: Src):
    for stmt in src.statements(is_step):
        yield src.delete(stmt)


@operator("drop_backward", "optimizer grad-flow grad-mode", "`loss.backward()` is missing", "A1")
def drop_backward(src: Src):
    for stmt in src.statements(is_backward):
        yield src.delete(stmt)


@operator("step_before_backward", "optimizer", "`optimizer.step()` called before `loss.backward()`", "A1")
def step_before_backward(src: Src):
    for stmt in src.statements(is_backward):
        step = later_in_block(src, stmt, is_step)
        if step is not None:
            text = _text_between(src, src.start(stmt), src.start(step))
            yield Edit(src.start(stmt), src.end(step), f"{src.segment(step)}; {text}pass")


def _lr(call: ast.Call) -> ast.expr | None:
    kw = keyword(call, "lr")
    if kw is not None:
        return kw.value
    if len(call.args) >= 2 and callee(call) != "LBFGS":
        return call.args[1]
    return None


def _lr_set_later(src: Src) -> bool:
    """The program sets each step's learning rate itself (`param_group["lr"] = lr`): the
    constructor's value is never used."""
    return re.search(r"""\[['"]lr['"]\]\s*=""", src.text + src.project) is not None


@operator("lr_x100", "optimizer numerics", "the learning rate is 100 times too large", "A16, forums: lr typo")
def lr_x100(src: Src):
    return _scaled_lr(src, "100")


def _scaled_lr(src: Src, factor: str):
    if _lr_set_later(src):
        return
    for call in src.calls():
        if is_optimizer_ctor(call) and (lr := _lr(call)) is not None:
            yield src.replace(lr, f"({src.segment(lr)}) * {factor}")


@operator("lr_tiny", "optimizer", "the learning rate is 10,000 times too small: the optimizer barely moves",
          "forums: 1e-7 for 1e-3")
def lr_tiny(src: Src):
    return _scaled_lr(src, "1e-4")


def _module_classes(src: Src) -> dict[str, ast.ClassDef]:
    return {c.name: c for c in ast.walk(src.tree) if isinstance(c, ast.ClassDef) and is_module_class(c)}


def _linear_attrs(cls: ast.ClassDef) -> list[str]:
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    attrs = []
    for node in ast.walk(init) if init else ():
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and callee(node.value) == "Linear"
                and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self"):
            attrs.append(node.targets[0].attr)
    return attrs


def _model_class(src: Src, scope: ast.AST, name: str) -> ast.ClassDef | None:
    classes = _module_classes(src)
    for node in src.walk_scope(scope):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name):
            call = node.value
            while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in {"to", "cuda"}:
                call = call.func.value
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in classes:
                return classes[call.func.id]
    return None


@operator("layer_replaced_after_optimizer", "optimizer",
          "a layer is replaced after the optimizer was built, so its new weights never train", "A7")
def layer_replaced_after_optimizer(src: Src):
    if not re.search(r"^import torch$|^import torch\b", src.text, re.M):
        return
    for stmt in src.statements(lambda s: isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
        call = stmt.value
        if not is_optimizer_ctor(call) or not call.args:
            continue
        params = call.args[0]
        if not (isinstance(params, ast.Call) and callee(params) == "parameters"
                and isinstance(receiver(params), ast.Name)):
            continue
        model = receiver(params).id
        cls = _model_class(src, src.function_of(stmt), model)
        attrs = _linear_attrs(cls) if cls else []
        if attrs:
            layer = f"{model}.{attrs[-1]}"
            yield src.after(stmt, f"{layer} = torch.nn.Linear({layer}.in_features, {layer}.out_features)")


@operator("optimizer_recreated_in_loop", "optimizer",
          "the optimizer is built again at every step, losing its state", "forums: optimizer inside the loop")
def optimizer_recreated_in_loop(src: Src):
    for stmt in src.statements(lambda s: isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)):
        if not is_optimizer_ctor(stmt.value) or len(stmt.targets) != 1:
            continue
        name = src.segment(stmt.targets[0])
        scope = src.function_of(stmt)
        for loop in src.walk_scope(scope):
            if isinstance(loop, (ast.For, ast.While)) and loop.lineno > stmt.lineno and any(
                    is_step(s) and src.segment(receiver(s.value)) == name for s in ast.walk(loop)
                    if isinstance(s, ast.stmt)):
                inner = _innermost_loop_with(src, loop, lambda s: is_step(s))
                yield src.line_before(inner.body[0], src.segment(stmt))
                break


def _innermost_loop_with(src: Src, loop: ast.AST, pred) -> ast.AST:
    for node in ast.walk(loop):
        if isinstance(node, (ast.For, ast.While)) and node is not loop and any(
                isinstance(s, ast.stmt) and pred(s) for s in node.body):
            return node
    return loop


@operator("clip_before_backward", "optimizer", "gradients clipped before `backward()` computes them", "A15")
def clip_before_backward(src: Src):
    for stmt in src.statements(is_backward):
        clip = later_in_block(src, stmt, is_clip)
        if clip is not None:
            text = _text_between(src, src.start(stmt), src.start(clip))
            yield Edit(src.start(stmt), src.end(clip), f"{src.segment(clip)}; {text}pass")


@operator("drop_grad_clipping", "numerics optimizer", "the gradient clipping a high learning rate relies on is removed",
          "word LM / RNN training")
def drop_grad_clipping(src: Src):
    for stmt in src.statements(is_clip):
        yield src.delete(stmt)


@operator("loss_negated", "optimizer numerics loss", "the loss is maximised (sign flipped)", "GAN sign errors")
def loss_negated(src: Src):
    for scope in training_scopes(src):
        for call in src.calls(scope, "backward"):
            rec = receiver(call)
            if isinstance(rec, ast.Name) and (assign := last_assignment(src, scope, rec.id, call.lineno)):
                yield src.replace(assign.value, f"-({src.segment(assign.value)})")


@operator("reduction_sum", "optimizer numerics", "the loss sums over the batch where the step size assumes a mean",
          "wrong reduction with SGD")
def reduction_sum(src: Src):
    if not (src.mentions("SGD") or re.search(r"\.data\.(add_|sub_)\(", src.text)):
        return
    for scope in training_scopes(src):
        names = backward_loss_names(src, scope)
        for call in src.calls(scope):
            loss = src.loss_call(call)
            if loss and loss[0].islower() and keyword(call, "reduction") is None and _feeds(src, call, names):
                end = src.end(call)
                yield Edit((end[0], end[1] - 1), end, ", reduction='sum')")


def _feeds(src: Src, call: ast.Call, names: set[str]) -> bool:
    for a in src.ancestors(call):
        if isinstance(a, ast.Assign):
            return any(isinstance(t, ast.Name) and t.id in names for t in a.targets)
        if isinstance(a, ast.stmt):
            return False
    return False


# --- train / eval modes ------------------------------------------------------------------------

def _mode_call(stmt: ast.stmt, name: str) -> bool:
    call = expr_call(stmt, name)
    return call is not None and not call.args and not call.keywords and receiver(call) is not None


def _has_dropout_or_norm(src: Src) -> bool:
    return src.mentions("Dropout", "dropout", "BatchNorm", "batch_norm")


@operator("drop_train_call", "mode", "`model.train()` is never called again after evaluation", "A4")
def drop_train_call(src: Src):
    if not src.mentions(".eval()") or not _has_dropout_or_norm(src):
        return
    for stmt in src.statements(lambda s: _mode_call(s, "train")):
        yield src.delete(stmt)


@operator("drop_eval_call", "mode", "the model is evaluated in training mode (`model.eval()` missing)", "A4")
def drop_eval_call(src: Src):
    if not _has_dropout_or_norm(src):
        return
    for stmt in src.statements(lambda s: _mode_call(s, "eval")):
        yield src.delete(stmt)


@operator("train_to_eval", "mode", "`model.eval()` where `model.train()` was meant", "A4")
def train_to_eval(src: Src):
    if not _has_dropout_or_norm(src):
        return
    for stmt in src.statements(lambda s: _mode_call(s, "train")):
        call = stmt.value
        yield src.replace(call.func, f"{src.segment(receiver(call))}.eval")


@operator("eval_not_called", "api mode", "`model.eval` written without the call", "forums")
def eval_not_called(src: Src):
    if not _has_dropout_or_norm(src):
        return
    for stmt in src.statements(lambda s: _mode_call(s, "eval")):
        yield src.replace(stmt.value, src.segment(stmt.value.func))


def _dropout_attrs(cls: ast.ClassDef) -> set[str]:
    return {node.targets[0].attr for node in ast.walk(cls)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and callee(node.value) == "Dropout"
            and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)}


@operator("functional_dropout", "mode", "`F.dropout` in `forward()` without `training=self.training`", "A5")
def functional_dropout(src: Src):
    if not src.mentions("import torch"):
        return
    for call in src.calls():
        cls = src.class_of(call)
        if cls is None or not src.in_forward(call):
            continue
        kw = keyword(call, "training")
        if callee(call) == "dropout" and kw is not None:
            rest = [n for n in [*call.args, *[k.value for k in call.keywords if k is not kw]]
                    if src.end(n) < src.start(kw.value)]
            if rest:
                yield Edit(src.end(max(rest, key=src.end)), src.end(kw.value), "")
            continue
        func = call.func
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
                and func.attr in _dropout_attrs(cls) and len(call.args) == 1):
            yield src.replace(call, f"torch.nn.functional.dropout({src.segment(call.args[0])}, p={src.segment(func)}.p)")


# --- losses ------------------------------------------------------------------------------------

def _training_loss_calls(src: Src, kinds: set[str]) -> Iterator[tuple[ast.Call, str]]:
    """Loss calls of the training: in a function that calls backward(), or in a model's forward()."""
    seen = set()
    forwards = [f for f in ast.walk(src.tree) if isinstance(f, ast.FunctionDef) and src.in_forward(f.body[0])]
    for scope in [*training_scopes(src), *forwards]:
        for call in src.calls(scope):
            loss = src.loss_call(call)
            if loss in kinds and call.args and id(call) not in seen:
                seen.add(id(call))
                yield call, loss


@operator("softmax_before_cross_entropy", "loss", "softmax applied to the logits a cross-entropy loss takes", "A2")
def softmax_before_cross_entropy(src: Src):
    if not src.mentions("import torch"):
        return
    for call, _ in _training_loss_calls(src, {"cross_entropy", "CrossEntropyLoss"}):
        first = call.args[0]
        yield src.replace(first, f"torch.softmax({src.segment(first)}, dim=1)")


@operator("log_softmax_to_softmax", "loss", "softmax where `NLLLoss` needs log-probabilities", "A2")
def log_softmax_to_softmax(src: Src):
    if not src.mentions("nll_loss", "NLLLoss"):
        return
    for call in src.calls():
        if callee(call) in {"log_softmax", "LogSoftmax"}:
            func = call.func
            if isinstance(func, ast.Attribute):
                yield Edit(src.end(func.value), src.end(func), "." + func.attr.replace("log_softmax", "softmax").replace(
                    "LogSoftmax", "Softmax"))
            else:
                yield src.replace(func, func.id.replace("log_softmax", "softmax").replace("LogSoftmax", "Softmax"))


@operator("sigmoid_before_bce_with_logits", "loss", "sigmoid applied before `BCEWithLogitsLoss`", "A3")
def sigmoid_before_bce_with_logits(src: Src):
    if not src.mentions("import torch"):
        return
    for call, _ in _training_loss_calls(src, {"binary_cross_entropy_with_logits", "BCEWithLogitsLoss"}):
        first = call.args[0]
        yield src.replace(first, f"torch.sigmoid({src.segment(first)})")


@operator("sigmoid_removed_before_bce", "loss", "raw scores fed to `BCELoss` (the sigmoid is missing)", "B-rows: BCELoss range")
def sigmoid_removed_before_bce(src: Src):
    if not src.mentions("BCELoss", "binary_cross_entropy(", "F.binary_cross_entropy"):
        return
    for call in src.calls():
        if callee(call) == "sigmoid" and call.args and len(call.args) == 1:
            yield src.replace(call, src.segment(call.args[0]))
        elif callee(call) == "Sigmoid" and not call.args:
            yield src.replace(call, src.segment(call).replace("Sigmoid", "Identity"))


def _dim(call: ast.Call) -> ast.expr | None:
    kw = keyword(call, "dim")
    if kw is not None:
        return kw.value
    if callee(call) in {"softmax", "log_softmax"} and isinstance(call.func, ast.Attribute) and len(call.args) == 2:
        return call.args[1]
    return None


@operator("softmax_over_batch", "loss api", "softmax over dim 0, the batch, instead of the classes", "A11")
def softmax_over_batch(src: Src):
    for call in src.calls():
        if callee(call) in {"softmax", "log_softmax", "Softmax", "LogSoftmax"} and (dim := _dim(call)) is not None:
            if src.segment(dim) in {"1", "-1"}:
                yield src.replace(dim, "0")


@operator("softmax_implicit_dim", "api loss", "softmax without `dim` (PyTorch guesses it)", "A11")
def softmax_implicit_dim(src: Src):
    for call in src.calls():
        kw = keyword(call, "dim")
        if callee(call) in {"softmax", "log_softmax"} and kw is not None and isinstance(call.func, ast.Attribute) \
                and call.args and isinstance(call.func.value, ast.Name) and call.func.value.id in {"F", "torch", "functional"}:
            yield Edit(src.end(call.args[-1]), src.end(kw), "")


@operator("loss_arguments_swapped", "loss", "target and prediction swapped in a class loss", "B3")
def loss_arguments_swapped(src: Src):
    for call, _ in _training_loss_calls(src, CLASS_LOSSES):
        if len(call.args) >= 2:
            a, b = call.args[0], call.args[1]
            yield Edit(src.start(a), src.end(b), f"{src.segment(b)}, {src.segment(a)}")


def _targets(src: Src, kinds: set[str], template: str):
    """The target of each training loss call of these kinds, rewritten by `template`."""
    for call, _ in _training_loss_calls(src, kinds):
        if len(call.args) >= 2:
            yield src.replace(call.args[1], template.format(src.segment(call.args[1])))


@operator("target_broadcast", "loss", "prediction and target of an element-wise loss differ in shape and broadcast", "A10")
def target_broadcast(src: Src):
    return _targets(src, ELEMENTWISE_LOSSES, "{}.unsqueeze(-1)")


@operator("target_out_of_range", "loss data", "class labels shifted by one (1..C instead of 0..C-1)", "B9")
def target_out_of_range(src: Src):
    return _targets(src, CLASS_LOSSES, "({} + 1)")


@operator("target_float", "dtype loss", "class labels converted to float", "B3")
def target_float(src: Src):
    return _targets(src, CLASS_LOSSES, "{}.float()")


# --- what reaches the model --------------------------------------------------------------------

def _model_names(src: Src) -> set[str]:
    """Names of the models: receivers of `.parameters()` handed to an optimizer, or `model`-like names."""
    names = {"model", "net", "self.model", "raw_model"}
    for call in src.calls():
        if is_optimizer_ctor(call) and call.args and isinstance(call.args[0], ast.Call) \
                and callee(call.args[0]) == "parameters" and receiver(call.args[0]) is not None:
            names.add(src.segment(receiver(call.args[0])))
    return names


def _model_calls(src: Src) -> Iterator[ast.Call]:
    models = _model_names(src)
    for scope in training_scopes(src):
        for call in src.calls(scope):
            if src.segment(call.func) in models and call.args:
                yield call


@operator("input_float64", "dtype", "float64 inputs fed to a float32 model", "B1")
def input_float64(src: Src):
    for call in _model_calls(src):
        first = call.args[0]
        yield src.replace(first, f"{src.segment(first)}.double()")


@operator("forward_under_no_grad", "grad-mode grad-flow", "the training forward runs under `torch.no_grad()`", "B5")
def forward_under_no_grad(src: Src):
    if not src.mentions("import torch"):
        return
    for call in _model_calls(src):
        stmt = next(a for a in src.ancestors(call) if isinstance(a, ast.stmt))
        if isinstance(stmt, ast.Assign) and stmt.lineno == stmt.end_lineno:
            yield src.replace(stmt, f"with torch.no_grad(): {src.segment(stmt)}")


@operator("no_grad_decorator_on_training", "grad-mode grad-flow", "the training function is decorated with `@torch.no_grad()`",
          "B5")
def no_grad_decorator_on_training(src: Src):
    if not src.mentions("import torch"):
        return
    for fn in ast.walk(src.tree):
        if isinstance(fn, ast.FunctionDef) and src.trains(fn) and not fn.decorator_list:
            yield src.line_before(fn, "@torch.no_grad()")


def _batch_moves(src: Src) -> Iterator[ast.Call]:
    """`x.to(device)` calls in a training loop on names the loop binds (the batch)."""
    for scope in training_scopes(src):
        for loop in src.walk_scope(scope):
            if not isinstance(loop, ast.For):
                continue
            bound = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
            for call in ast.walk(loop):
                if (callee(call) if isinstance(call, ast.Call) else None) == "to" and isinstance(receiver(call), ast.Name) \
                        and receiver(call).id in bound:
                    yield call


@operator("missing_to_device", "device", "a batch tensor is not moved to the model's device", "B2")
def missing_to_device(src: Src):
    for call in _batch_moves(src):
        yield src.replace(call, receiver(call).id)


@operator("to_device_discarded", "device", "`x.to(device)` whose result is thrown away", "B2")
def to_device_discarded(src: Src):
    for stmt in src.statements(lambda s: isinstance(s, ast.Assign) and len(s.targets) == 1):
        value, target = stmt.value, stmt.targets[0]
        if (isinstance(value, ast.Call) and callee(value) == "to" and isinstance(target, ast.Name)
                and isinstance(receiver(value), ast.Name) and receiver(value).id == target.id
                and src.loop_of(stmt) is not None):
            yield src.replace(stmt, src.segment(value))


@operator("labels_misaligned", "data optimizer", "inputs and labels misaligned (labels of other samples)",
          "shuffling inputs and labels separately")
def labels_misaligned(src: Src):
    for scope in training_scopes(src):
        for loop in src.walk_scope(scope):
            if not isinstance(loop, ast.For) or not any(is_backward(s) for s in ast.walk(loop) if isinstance(s, ast.stmt)):
                continue
            names = [n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)]
            if len(names) >= 2 and "loader" in src.segment(loop.iter) and names[-1] != "_":
                label = names[-1]
                first = loop.body[0]
                if not isinstance(first, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                    yield src.before(first, f"{label} = {label}.roll(1, 0)")


@operator("no_shuffle", "data", "the training DataLoader does not shuffle", "forums; TD451")
def no_shuffle(src: Src):
    for call in src.calls(name="DataLoader"):
        kw = keyword(call, "shuffle")
        if kw is not None and src.segment(kw.value) == "True":
            yield src.replace(kw.value, "False")


@operator("drop_set_epoch", "distributed data", "`DistributedSampler.set_epoch()` is never called", "A8")
def drop_set_epoch(src: Src):
    for stmt in src.statements(lambda s: expr_call(s, "set_epoch") is not None):
        yield src.delete(stmt)


@operator("drop_batch_first", "data api", "an RNN built for (seq, batch) fed (batch, seq) tensors", "A19")
def drop_batch_first(src: Src):
    for call in src.calls():
        kw = keyword(call, "batch_first")
        if callee(call) in {"LSTM", "GRU", "RNN"} and kw is not None and src.segment(kw.value) == "True":
            prev = call.args[-1] if call.args else None
            others = [k for k in call.keywords if k is not kw]
            if prev is None and not others:
                continue
            # remove ", batch_first=True" together with the comma before it
            anchor = max([n for n in [prev, *[k.value for k in others]] if n is not None and src.end(n) < src.start(kw)],
                         key=lambda n: src.end(n), default=None)
            if anchor is not None:
                yield Edit(src.end(anchor), src.end(kw), "")


# --- the graph ---------------------------------------------------------------------------------

def _forward_layer_assigns(src: Src) -> Iterator[ast.Assign]:
    for stmt in src.statements(lambda s: isinstance(s, ast.Assign) and len(s.targets) == 1):
        if not src.in_forward(stmt) or not isinstance(stmt.targets[0], ast.Name):
            continue
        if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
               and c.func.value.id == "self" for c in ast.walk(stmt.value)):
            yield stmt


@operator("detach_in_forward", "grad-flow", "`.detach()` on an activation inside `forward()`", "A-rows: graph cut")
def detach_in_forward(src: Src):
    for stmt in _forward_layer_assigns(src):
        yield src.replace(stmt.value, f"{_atom(src, stmt.value)}.detach()")


@operator("data_in_forward", "grad-flow", "`.data` on an activation inside `forward()`", "A-rows: graph cut")
def data_in_forward(src: Src):
    for stmt in _forward_layer_assigns(src):
        yield src.replace(stmt.value, f"{_atom(src, stmt.value)}.data")


def _atom(src: Src, node: ast.expr) -> str:
    text = src.segment(node)
    return text if isinstance(node, (ast.Call, ast.Name, ast.Attribute, ast.Subscript)) else f"({text})"


@operator("loss_rewrapped", "grad-flow", "the loss rebuilt from `.item()` as a new leaf tensor", "A-rows: rewrapped loss")
def loss_rewrapped(src: Src):
    if not src.mentions("import torch"):
        return
    for scope in training_scopes(src):
        for call in src.calls(scope, "backward"):
            rec = receiver(call)
            if isinstance(rec, ast.Name) and (assign := last_assignment(src, scope, rec.id, call.lineno)):
                yield src.replace(assign.value, f"torch.tensor({_atom(src, assign.value)}.item(), requires_grad=True)")


@operator("modules_in_plain_list", "grad-flow", "submodules kept in a plain list instead of `nn.ModuleList`", "A6")
def modules_in_plain_list(src: Src):
    for call in src.calls():
        if callee(call) in {"ModuleList", "ModuleDict"} and call.args:
            kind = "list" if callee(call) == "ModuleList" else "dict"
            yield src.replace(call.func, kind)


@operator("parameter_as_plain_tensor", "grad-flow", "a weight made a tensor with `requires_grad` instead of `nn.Parameter`",
          "A6")
def parameter_as_plain_tensor(src: Src):
    for call in src.calls(name="Parameter"):
        if len(call.args) == 1 and not call.keywords and src.class_of(call) is not None:
            yield src.replace(call, f"{_atom(src, call.args[0])}.requires_grad_()")


@operator("hidden_state_not_detached", "grad-flow memory", "an RNN's hidden state carried across batches with its graph",
          "truncated BPTT")
def hidden_state_not_detached(src: Src):
    for stmt in src.statements(lambda s: isinstance(s, ast.Assign) and len(s.targets) == 1):
        value = stmt.value
        if src.loop_of(stmt) is None or not isinstance(value, ast.Call):
            continue
        name = callee(value) or ""
        args = [src.segment(a) for a in value.args] + ([src.segment(receiver(value))] if receiver(value) else [])
        if ("repackage" in name or name in {"detach", "detach_"}) and src.segment(stmt.targets[0]) in args:
            yield src.delete(stmt)


@operator("inplace_on_saved_output", "grad-flow", "an activation modified in place after an op saved it for backward",
          "B6")
def inplace_on_saved_output(src: Src):
    for stmt in src.statements(lambda s: isinstance(s, ast.Assign) and len(s.targets) == 1):
        if not isinstance(stmt.targets[0], ast.Name) or not isinstance(stmt.value, ast.Call):
            continue
        if callee(stmt.value) in SAVES_OUTPUT and src.in_forward(stmt):
            yield src.after(stmt, f"{stmt.targets[0].id} += 1e-8")


@operator("missing_super_init", "api", "`super().__init__()` missing in an nn.Module", "B-rows")
def missing_super_init(src: Src):
    for stmt in src.statements(lambda s: expr_call(s, "__init__") is not None):
        rec = receiver(stmt.value)
        if isinstance(rec, ast.Call) and callee(rec) == "super":
            cls = src.class_of(stmt)
            if cls is not None and is_module_class(cls):
                yield src.delete(stmt)


# --- memory and numerics -----------------------------------------------------------------------

@operator("loss_accumulated_with_history", "memory", "a running loss total built from tensors, not `.item()`", "A9")
def loss_accumulated_with_history(src: Src):
    for scope in training_scopes(src):
        for node in src.walk_scope(scope):
            if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
                for call in ast.walk(node.value):
                    if isinstance(call, ast.Call) and callee(call) == "item" and not call.args \
                            and "loss" in src.segment(receiver(call)).lower():
                        yield src.replace(call, src.segment(receiver(call)))
                        break


@operator("retain_graph_in_loop", "memory", "`backward(retain_graph=True)` at every step", "A9")
def retain_graph_in_loop(src: Src):
    for stmt in src.statements(is_backward):
        call = stmt.value
        if not call.args and not call.keywords and src.loop_of(stmt) is not None:
            end = src.end(call)
            yield Edit((end[0], end[1] - 1), end, "retain_graph=True)")


@operator("evaluation_with_grad", "memory", "evaluation without `torch.no_grad()`", "E7")
def evaluation_with_grad(src: Src):
    models = _model_names(src)
    for node in ast.walk(src.tree):
        if isinstance(node, ast.With) and len(node.items) == 1:
            ctx = node.items[0].context_expr
            if not (isinstance(ctx, ast.Call) and callee(ctx) == "no_grad"):
                continue
            trains_here = any(is_backward(s) for s in ast.walk(node) if isinstance(s, ast.stmt))
            runs_model = any(isinstance(c, ast.Call) and src.segment(c.func) in models for c in ast.walk(node))
            if runs_model and not trains_here:
                yield src.replace(ctx.func, src.segment(ctx.func).replace("no_grad", "enable_grad"))


@operator("init_scale_x1000", "numerics", "weights initialised 1000 times too large", "init std typo")
def init_scale_x1000(src: Src):
    for call in src.calls():
        name = callee(call)
        if name in {"normal_", "uniform_"}:
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Attribute) \
                    and call.func.value.attr == "init":
                args = call.args[1:]          # nn.init.normal_(tensor, mean, std)
                kw = keyword(call, "std") or keyword(call, "b")
            else:
                args = call.args               # tensor.normal_(mean, std)
                kw = keyword(call, "std") or keyword(call, "to")
            target = kw.value if kw is not None else (args[-1] if args else None)
            if target is not None:
                yield src.replace(target, f"({src.segment(target)}) * 1000")


def mutants(source: str, op: Operator | str, project: str = "") -> Iterator[Mutation]:
    """Every mutation of one operator in `source`, each applied alone to the original text
    (`project`: the text of the program's other files, for operators that look there)."""
    op = OPERATORS[op] if isinstance(op, str) else op
    src = Src(source, project)
    seen = set()
    for edit in op.find(src):
        key = (edit.start, edit.end, edit.text)
        if key in seen:
            continue
        seen.add(key)
        text = apply(src, edit)
        try:
            ast.parse(text)
        except SyntaxError:
            continue
        before = _text_between(src, edit.start, edit.end)
        yield Mutation(op.name, changed_lines(source, text, edit.inserted), text, before, edit.text, edit.inserted)


def changed_lines(original: str, mutated: str, inserted: int | None) -> tuple[int, ...]:
    if inserted is not None:
        return (inserted,)
    old, new = original.splitlines(), mutated.splitlines()
    return tuple(i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b)


def apply(src: Src, edit: Edit) -> str:
    (l1, c1), (l2, c2) = edit.start, edit.end
    head = "".join(src.lines[: l1 - 1]) + src.lines[l1 - 1][:c1] if src.lines else ""
    tail = src.lines[l2 - 1][c2:] + "".join(src.lines[l2:]) if l2 <= len(src.lines) else ""
    return head + edit.text + tail
