"""The corpus of the mutation bench: correct training programs written outside this project.

Each `Program` names the repository snapshot it comes from, the files to extract, the file to
run, arguments that shrink it to seconds, the synthetic data files it reads (made by `setup`),
and the files the operators mutate. Nothing here is fetched code: the code is extracted from
mirrors into the corpus folder (see bench/mutation_bench.py's docstring).
"""

from __future__ import annotations

import pickle
import random
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLES = ("pytorch/examples", "77f55b9")
YUNJEY = ("yunjey/pytorch-tutorial", "0500d3d")
NANOGPT = ("karpathy/nanoGPT", "3adf61e1")
MINGPT = ("karpathy/minGPT", "37baab7")


@dataclass(frozen=True)
class Program:
    name: str
    source: tuple[str, str]          # (repository, commit)
    folder: str                      # folder of the repository to extract (its whole tree)
    entry: str                       # the script, relative to `folder`
    args: tuple[str, ...] = ()
    mutate: tuple[str, ...] = ()     # files the operators change (default: the entry)
    env: dict = field(default_factory=dict)
    setup: Callable[[Path], None] | None = None   # writes synthetic data files under the program's folder
    run: bool = True                 # False: linted only (needs several processes or a GPU)
    paths: tuple[str, ...] = ()      # folders of the program put on PYTHONPATH (an installed package)

    @property
    def targets(self) -> tuple[str, ...]:
        return self.mutate or (self.entry,)


# --- synthetic data files --------------------------------------------------------------------

def _sentences(count: int, seed: int) -> list[str]:
    """Text from a small Markov chain: learnable, so a correct language model's loss falls."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(60)]
    follow = {w: rng.sample(words, 3) for w in words}
    lines = []
    for _ in range(count):
        w = rng.choice(words)
        line = [w]
        for _ in range(rng.randint(6, 14)):
            w = rng.choice(follow[w])
            line.append(w)
        lines.append(" ".join(line))
    return lines


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def _wikitext(folder: Path) -> None:
    for name, count, seed in (("train", 300, 1), ("valid", 40, 2), ("test", 40, 3)):
        _write_lines(folder / "data" / "wikitext-2" / f"{name}.txt", _sentences(count, seed))


def _yunjey_text(folder: Path) -> None:
    _write_lines(folder / "data" / "train.txt", _sentences(100, 4))


def _shakespeare_char(folder: Path) -> None:
    text = "\n".join(_sentences(400, 5))
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = folder / "data" / "shakespeare_char"
    data.mkdir(parents=True, exist_ok=True)
    ids = [stoi[c] for c in text]
    cut = int(len(ids) * 0.9)
    for name, part in (("train", ids[:cut]), ("val", ids[cut:])):
        (data / f"{name}.bin").write_bytes(struct.pack(f"<{len(part)}H", *part))
    with open(data / "meta.pkl", "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)


def _chargpt(folder: Path) -> None:
    _write_lines(folder / "input.txt", _sentences(300, 6))


# --- the corpus --------------------------------------------------------------------------------

SMALL = {"TD_MUTATION_TRAIN_SIZE": "960", "TD_MUTATION_TEST_SIZE": "200"}
# two epochs of 24 batches of 100: at least the 40 optimizer steps a stalled loss (TD494) needs
LONGER = {"TD_MUTATION_TRAIN_SIZE": "2400", "TD_MUTATION_TEST_SIZE": "200"}

PROGRAMS: tuple[Program, ...] = (
    Program("examples/mnist", EXAMPLES, "mnist", "main.py",
            ("--epochs", "2", "--test-batch-size", "200", "--log-interval", "5"),
            env={"TD_MUTATION_TRAIN_SIZE": "1600", "TD_MUTATION_TEST_SIZE": "200"}),
    Program("examples/mnist_rnn", EXAMPLES, "mnist_rnn", "main.py",
            ("--epochs", "2", "--test-batch-size", "256", "--log-interval", "5"), env=SMALL),
    Program("examples/vae", EXAMPLES, "vae", "main.py", ("--epochs", "2", "--log-interval", "5"), env=SMALL),
    Program("examples/siamese_network", EXAMPLES, "siamese_network", "main.py",
            ("--epochs", "1", "--batch-size", "32", "--test-batch-size", "64", "--log-interval", "5"),
            env={"TD_MUTATION_TRAIN_SIZE": "512", "TD_MUTATION_TEST_SIZE": "128"}),
    Program("examples/dcgan", EXAMPLES, "dcgan", "main.py",
            ("--dataset", "fake", "--niter", "1", "--batchSize", "16", "--imageSize", "64", "--ngf", "8",
             "--ndf", "8", "--nz", "16", "--workers", "0", "--outf", "out", "--manualSeed", "1"),
            env={"TD_MUTATION_TRAIN_SIZE": "480"}),
    Program("examples/word_language_model", EXAMPLES, "word_language_model", "main.py",
            ("--epochs", "2", "--emsize", "32", "--nhid", "32", "--bptt", "20", "--batch_size", "10",
             "--log-interval", "10", "--save", "model.pt"),
            mutate=("main.py", "model.py"), setup=_wikitext),
    Program("examples/reinforce", EXAMPLES, "reinforcement_learning", "reinforce.py",
            ("--log-interval", "10"), env={"TD_MUTATION_EPISODES": "40"}),
    Program("examples/actor_critic", EXAMPLES, "reinforcement_learning", "actor_critic.py",
            ("--log-interval", "10"), env={"TD_MUTATION_EPISODES": "40"}),
    Program("examples/regression", EXAMPLES, "regression", "main.py"),
    Program("examples/ddp_single_gpu", EXAMPLES, "distributed/ddp-tutorial-series", "single_gpu.py",
            ("3", "10", "--batch_size", "32"), mutate=("single_gpu.py", "datautils.py"), run=False),
    Program("examples/ddp_torchrun", EXAMPLES, "distributed/ddp-tutorial-series", "multigpu_torchrun.py",
            run=False),
    Program("yunjey/feedforward", YUNJEY, "tutorials/01-basics/feedforward_neural_network", "main.py", env=SMALL),
    Program("yunjey/logistic_regression", YUNJEY, "tutorials/01-basics/logistic_regression", "main.py", env=SMALL),
    Program("yunjey/cnn", YUNJEY, "tutorials/02-intermediate/convolutional_neural_network", "main.py",
            env={"TD_MUTATION_TRAIN_SIZE": "800", "TD_MUTATION_TEST_SIZE": "200"}),
    Program("yunjey/rnn", YUNJEY, "tutorials/02-intermediate/recurrent_neural_network", "main.py", env=LONGER),
    Program("yunjey/birnn", YUNJEY, "tutorials/02-intermediate/bidirectional_recurrent_neural_network",
            "main.py", env=LONGER),
    Program("yunjey/resnet", YUNJEY, "tutorials/02-intermediate/deep_residual_network", "main.py",
            env={"TD_MUTATION_TRAIN_SIZE": "40", "TD_MUTATION_TEST_SIZE": "40"}),
    Program("yunjey/language_model", YUNJEY, "tutorials/02-intermediate/language_model", "main.py",
            mutate=("main.py", "data_utils.py"), setup=_yunjey_text),
    Program("yunjey/gan", YUNJEY, "tutorials/03-advanced/generative_adversarial_network", "main.py",
            env={"TD_MUTATION_TRAIN_SIZE": "200"}),
    Program("yunjey/vae", YUNJEY, "tutorials/03-advanced/variational_autoencoder", "main.py",
            env={"TD_MUTATION_TRAIN_SIZE": "640"}),
    Program("karpathy/nanoGPT", NANOGPT, "", "train.py",
            ("--dataset=shakespeare_char", "--device=cpu", "--compile=False", "--dtype=float32",
             "--eval_iters=2", "--eval_interval=40", "--log_interval=10", "--block_size=32", "--batch_size=8",
             "--n_layer=2", "--n_head=2", "--n_embd=32", "--max_iters=60", "--lr_decay_iters=60",
             "--warmup_iters=5", "--gradient_accumulation_steps=2", "--dropout=0.1", "--always_save_checkpoint=False", "--out_dir=out"),
            mutate=("train.py", "model.py"), setup=_shakespeare_char),
    Program("karpathy/minGPT_adder", MINGPT, "", "projects/adder/adder.py",
            ("--trainer.max_iters=120", "--trainer.num_workers=0", "--trainer.device=cpu",
             "--trainer.batch_size=32", "--system.work_dir=out"),
            mutate=("mingpt/trainer.py", "mingpt/model.py", "projects/adder/adder.py"), paths=(".",)),
)

KEEP = {
    # files of a repository-wide folder ("") worth extracting: the rest is data preparation and configs
    NANOGPT: ("train.py", "model.py", "configurator.py"),
    MINGPT: ("mingpt/", "projects/adder/"),
}
