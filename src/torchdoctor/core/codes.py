"""Where a new rule's code comes from: each category has a block of codes (`BLOCKS`).

Codes are never renumbered. Until the blocks, codes were taken from ranges per command (lint,
check, run, ...), and a bug that several commands report did not fit them; the codes taken
then keep their numbers (`GRANDFATHERED`), in whichever range they lie. A new rule takes the
next free code of its category's block (`next_free`, what `python -m torchdoctor.dev new-rule`
proposes). TD000-TD099 stay the tool's own: torchdoctor's failures and the files it could not
read (`TOOL_BLOCK`), whatever their category.
"""

from __future__ import annotations

from collections.abc import Iterable

from torchdoctor.core.finding import Category

#: category -> the codes its new rules take (each block lay free when it was given)
BLOCKS: dict[Category, range] = {
    Category.DEVICE: range(200, 220),
    Category.DTYPE: range(220, 240),
    Category.GRAD_FLOW: range(240, 260),
    Category.GRAD_MODE: range(260, 280),
    Category.OPTIMIZER: range(280, 300),
    Category.LOSS: range(320, 340),
    Category.MODE: range(340, 360),
    Category.DATA: range(360, 380),
    Category.NUMERICS: range(380, 400),
    Category.MEMORY: range(500, 520),
    Category.COMPILE: range(520, 540),
    Category.PERFORMANCE: range(540, 560),
    Category.API: range(560, 580),
    Category.REPRODUCIBILITY: range(580, 600),
    Category.ENV: range(620, 660),
    Category.DISTRIBUTED: range(720, 760),
}
#: torchdoctor's own failures (a crashed script, a file lint could not read), in any category
TOOL_BLOCK = range(0, 100)
#: the codes rules had before the blocks (from the per-command ranges): kept where they are
GRANDFATHERED = frozenset({
    "TD101", "TD102", "TD103", "TD104", "TD105", "TD106", "TD107", "TD108", "TD109", "TD110", "TD111", "TD112",
    "TD113", "TD114", "TD115", "TD116", "TD119", "TD120", "TD121", "TD122", "TD123", "TD124", "TD130", "TD131",
    "TD132", "TD133", "TD140", "TD141", "TD142", "TD143", "TD145", "TD146", "TD147", "TD148", "TD150", "TD151",
    "TD152", "TD153", "TD154", "TD155", "TD156", "TD157", "TD158", "TD159", "TD160", "TD161", "TD162", "TD163",
    "TD165", "TD166", "TD167", "TD168", "TD169", "TD170", "TD171", "TD172", "TD173", "TD174", "TD175", "TD176",
    "TD177", "TD178", "TD179", "TD180", "TD181", "TD300", "TD301", "TD302", "TD303", "TD304", "TD305", "TD306",
    "TD307", "TD309", "TD310", "TD311", "TD312", "TD313", "TD314", "TD315", "TD400", "TD401", "TD410", "TD411",
    "TD412", "TD413", "TD414", "TD415", "TD416", "TD417", "TD418", "TD419", "TD420", "TD421", "TD422", "TD423",
    "TD424", "TD425", "TD426", "TD427", "TD428", "TD429", "TD430", "TD431", "TD432", "TD433", "TD440", "TD441",
    "TD442", "TD450", "TD451", "TD452", "TD460", "TD461", "TD462", "TD463", "TD464", "TD465", "TD470", "TD471",
    "TD472", "TD473", "TD474", "TD475", "TD480", "TD481", "TD482", "TD483", "TD484", "TD485", "TD486", "TD487",
    "TD488", "TD490", "TD491", "TD492", "TD493", "TD494", "TD495", "TD496", "TD497", "TD498", "TD499", "TD600",
    "TD601", "TD602", "TD603", "TD604", "TD605", "TD606", "TD607", "TD608", "TD609", "TD610", "TD611", "TD612",
    "TD613", "TD614", "TD615", "TD616", "TD617", "TD700", "TD701", "TD702", "TD703", "TD704", "TD705", "TD706",
    "TD707", "TD708", "TD709", "TD710", "TD711", "TD712", "TD713", "TD714", "TD715", "TD716", "TD717", "TD718",
})


def code(number: int) -> str:
    return f"TD{number:03d}"


def shown(block: range) -> str:
    """`TD200–TD219`."""
    return f"{code(block.start)}–{code(block.stop - 1)}"


def allowed(category: Category, rule_code: str) -> bool:
    """Whether a rule of `category` may have `rule_code`: in its category's block, the tool's
    own block, or a code taken before the blocks."""
    number = int(rule_code[2:])
    return number in BLOCKS[category] or number in TOOL_BLOCK or rule_code in GRANDFATHERED


def next_free(category: Category, taken: Iterable[str]) -> str | None:
    """The first code of `category`'s block no rule has (None when the block is full: give the
    category a second block here)."""
    used = set(taken)
    return next((code(number) for number in BLOCKS[category] if code(number) not in used), None)
