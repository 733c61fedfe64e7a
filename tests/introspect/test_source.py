"""Where `model.eval()` and `model.train()` belong (the lines TD133 and TD131 point at, in lint
and run), read off the source of the usual shapes of training scripts."""

from __future__ import annotations

import ast
import textwrap

from torchdoctor.introspect.source import evaluation_site, training_site


def parse(text: str) -> tuple[ast.Module, list[str]]:
    source = textwrap.dedent(text)
    return ast.parse(source), source.splitlines()


def line(lines: list[str], text: str) -> int:
    return next(number for number, content in enumerate(lines, 1) if text in content)


FUNCTIONS = '''
def train(model, loader, optimizer):
    """One epoch."""
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        loss(model(x), y).backward()
        optimizer.step()

def test(model, loader):
    """Accuracy."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum()
    print(correct)

for epoch in range(3):
    train(model, loader, optimizer)
    test(model, loader)
'''


def test_an_evaluation_function_switches_at_its_first_statement() -> None:
    tree, lines = parse(FUNCTIONS)
    assert evaluation_site(tree, line(lines, "correct += ")).lineno == line(lines, "    model.eval()")


def test_a_training_function_switches_back_when_it_starts() -> None:
    tree, lines = parse(FUNCTIONS)
    site = training_site(tree, line(lines, "optimizer.step()"), line(lines, "model.eval()"))
    assert site.lineno == line(lines, "    model.train()")


SCRIPT = '''
for epoch in range(3):
    for x, y in loader:
        optimizer.zero_grad()
        loss(model(x), y).backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(val_x).argmax(1) == val_y).float().mean()
'''


def test_a_script_evaluates_in_its_no_grad_block_and_trains_at_the_top_of_the_loop() -> None:
    tree, lines = parse(SCRIPT)
    assert evaluation_site(tree, line(lines, "accuracy = ")).lineno == line(lines, "with torch.no_grad():")
    site = training_site(tree, line(lines, "optimizer.step()"), line(lines, "model.eval()"))
    assert site.lineno == line(lines, "for x, y in loader:")


def test_an_eval_before_the_step_of_the_same_pass_is_the_line_to_change() -> None:
    tree, lines = parse('''
    for x, y in loader:
        model.eval()
        optimizer.zero_grad()
        loss(model(x), y).backward()
        optimizer.step()
    ''')
    assert training_site(tree, line(lines, "optimizer.step()"), line(lines, "model.eval()")) is None


EVALUATION_HELPER = '''
@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ("train", "val"):
        out[split] = model(batch(split)).mean()
    return out

def validate(model, x):
    model.eval()
    with torch.no_grad():
        return model(x).mean()

def fit(model, loader, optimizer):
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss(model(x), y).backward()
        optimizer.step()
        if step % 100 == 0:
            validate(model, x)

while True:
    if step % 100 == 0:
        losses = estimate_loss()
    loss(model(x), y).backward()
    optimizer.step()
'''


def test_an_evaluation_helper_switches_back_before_it_returns() -> None:
    tree, lines = parse(EVALUATION_HELPER)
    script_step = len(lines)  # the last line: the script's own `optimizer.step()`
    site = training_site(tree, script_step, line(lines, "    model.eval()"))
    assert site.lineno == line(lines, "return out")


def test_a_helper_that_returns_inside_a_block_leaves_it_to_the_loop_that_calls_it() -> None:
    tree, lines = parse(EVALUATION_HELPER)
    validate_eval = [n for n, text in enumerate(lines, 1) if "model.eval()" in text][1]
    fit_step = [n for n, text in enumerate(lines, 1) if "optimizer.step()" in text][0]
    assert training_site(tree, fit_step, validate_eval).lineno == line(lines, "        optimizer.zero_grad()")


def test_eval_before_training_is_called_is_the_line_to_change() -> None:
    tree, lines = parse('''
    def fit(model, optimizer):
        for _ in range(3):
            model(x).sum().backward()
            optimizer.step()

    def main():
        model.eval()
        fit(model, optimizer)
    ''')
    assert training_site(tree, line(lines, "optimizer.step()"), line(lines, "model.eval()")) is None


def test_a_function_that_trains_and_evaluates_switches_before_its_no_grad_block() -> None:
    tree, lines = parse('''
    def run(model, loader, optimizer):
        for x, y in loader:
            loss(model(x), y).backward()
            optimizer.step()
        with torch.no_grad():
            print(model(x).mean())
    ''')
    assert evaluation_site(tree, line(lines, "print(model(x)")).lineno == line(lines, "with torch.no_grad():")
    assert evaluation_site(tree, line(lines, "loss(model(x)")) is None  # not an evaluation: no site
