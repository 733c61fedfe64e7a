"""Correct code in the shapes research training scripts take (lint must stay silent): an AC-GAN
with a class head, distillation from a frozen teacher, a trainer whose step is a method, an
epoch function told its mode, a TorchScript-friendly module, a DDP early stop, an adversarial
evaluation, an LR warm-up stepped before the optimizer."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Discriminator(nn.Module):
    """Two heads: real/fake (logits) and the class (logits: CrossEntropyLoss applies softmax)."""

    def __init__(self, n_classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(64, 128), nn.LeakyReLU(0.2))
        self.adv = nn.Linear(128, 1)
        self.aux = nn.Linear(128, n_classes)

    def forward(self, x):
        h = self.body(x)
        return self.adv(h), self.aux(h), F.softmax(self.aux(h), dim=1)


class Generator(nn.Module):
    def __init__(self, nz, n_classes):
        super().__init__()
        self.embed = nn.Embedding(n_classes, nz)
        self.net = nn.Sequential(nn.Linear(nz, 64), nn.Tanh())

    def forward(self, z, labels):
        return self.net(z * self.embed(labels))


def train_acgan(loader, n_classes, nz, epochs):
    generator, discriminator = Generator(nz, n_classes), Discriminator(n_classes)
    adversarial, auxiliary = nn.BCEWithLogitsLoss(), nn.CrossEntropyLoss()
    opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for epoch in range(epochs):
        for real, labels in loader:
            valid, fake_label = torch.ones(real.size(0), 1), torch.zeros(real.size(0), 1)
            opt_g.zero_grad()
            gen_labels = torch.randint(0, n_classes, (real.size(0),))
            fake = generator(torch.randn(real.size(0), nz), gen_labels)
            validity, class_logits, _ = discriminator(fake)
            g_loss = adversarial(validity, valid) + auxiliary(class_logits, gen_labels)
            g_loss.backward()
            opt_g.step()

            opt_d.zero_grad()
            real_validity, real_logits, real_probs = discriminator(real)
            fake_validity, fake_logits, _ = discriminator(fake.detach())
            d_loss = (adversarial(real_validity, valid) + auxiliary(real_logits, labels)
                      + adversarial(fake_validity, fake_label) + auxiliary(fake_logits, gen_labels)) / 4
            d_loss.backward()
            opt_d.step()
            accuracy = (real_probs.argmax(1) == labels).float().mean().item()
        print(epoch, d_loss.item(), g_loss.item(), accuracy)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Linear(32, 32)
        self.conv2 = nn.Linear(32, 32)
        self.stages = [self.conv1, self.conv2]  # an index of layers registered above
        self.heads = []
        for k in range(2):
            head = nn.Linear(32, 4)
            self.add_module(f"head{k}", head)
            self.heads.append(head)
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(1)) for _ in range(2)])

    def forward(self, x):
        for stage in self.stages:
            x = F.relu(stage(x))
        if self.training:
            x = F.dropout(x, p=0.1)
        lengths = torch.tensor([row.shape[0] for row in x])
        logits = [head(x) * scale for head, scale in zip(self.heads, self.scales)]
        predictions = logits[0].data.max(1)[1]
        return sum(logits), lengths, predictions


def evaluate(student, teacher, loader):
    student.eval()
    teacher.eval()
    with torch.no_grad():
        return sum(F.mse_loss(student(x)[0], teacher(x)[0]).item() for x, _ in loader)


def distill(student, teacher, loader, epochs):
    optimizer = torch.optim.SGD(student.parameters(), lr=0.01)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad = False
    for epoch in range(epochs):
        student.train()
        for step, (x, y) in enumerate(loader):
            optimizer.zero_grad()
            with torch.no_grad():
                target = teacher(x)[0]
            loss = F.mse_loss(student(x)[0], target) + F.cross_entropy(student(x)[0], y)
            loss.backward()
            optimizer.step()
            if step % 50 == 0:
                print(evaluate(student, teacher, loader))
                student.train()


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.criterion = nn.CrossEntropyLoss()

    def train_step(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.criterion(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            self.model.train()
            for x, y in loader:
                self.train_step(x, y)


def run_epoch(model, loader, criterion, optimizer, mode):
    if mode == "train":
        model.train()
    else:
        model.eval()
    total = 0.0
    for x, y in loader:
        with torch.set_grad_enabled(mode == "train"):
            loss = criterion(model(x), y)
        if mode == "train":
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total += loss.item()
    return total / len(loader)


def adversarial_accuracy(model, loader, eps):
    model.eval()
    correct = 0
    for x, y in loader:
        x = x.clone().requires_grad_(True)
        grad, = torch.autograd.grad(F.cross_entropy(model(x), y), [x])
        with torch.no_grad():
            correct += (model(x + eps * grad.sign()).argmax(1) == y).sum().item()
    return correct


class WarmUp:
    """Sets the learning rate of the step about to be taken: stepped before optimizer.step()."""

    def __init__(self, optimizer, warmup, base_lr):
        self.optimizer, self.warmup, self.base_lr, self.count = optimizer, warmup, base_lr, 0

    def step(self):
        self.count += 1
        for group in self.optimizer.param_groups:
            group["lr"] = self.base_lr * min(1.0, self.count / self.warmup)


def train_with_warmup(model, loader, optimizer, scheduler, accumulate):
    for step, (x, y) in enumerate(loader):
        (F.cross_entropy(model(x), y) / accumulate).backward()
        if (step + 1) % accumulate == 0:
            scheduler.step()
            optimizer.step()
            optimizer.zero_grad()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    data = TensorDataset(torch.randn(64, 32), torch.randint(0, 4, (64,)))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = Encoder()
    trainer = Trainer(model, 1e-3)
    stop = False
    for epoch in range(args.epochs):
        trainer.fit(loader, 1)
        print(run_epoch(model, loader, nn.CrossEntropyLoss(), trainer.optimizer, "val"))
        if args.local_rank != -1:  # distributed at all: every rank takes part
            flags = [stop if args.local_rank == 0 else None]
            dist.broadcast_object_list(flags, 0)
            stop = flags[0]
        if stop:
            break
    print(adversarial_accuracy(model, loader, 0.01))
    train_with_warmup(model, loader, trainer.optimizer, WarmUp(trainer.optimizer, 10, 1e-3), 2)


if __name__ == "__main__":
    main()
