"""An image classifier trained the pytorch/examples way, with DDP (correct code: lint must stay silent)."""
import argparse
import os
import random
import shutil

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, Dataset, get_worker_info
from torch.utils.data.distributed import DistributedSampler


class Net(nn.Module):
    def __init__(self, classes=10):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.bn = nn.BatchNorm2d(64)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, classes)
        self.temperature = nn.Parameter(torch.ones(1))
        self.register_buffer("mean", torch.zeros(1))

    def forward(self, x):
        x = F.relu(self.conv1(x - self.mean))
        x = F.max_pool2d(F.relu(self.bn(self.conv2(x))), 2)
        x = torch.flatten(self.dropout1(x), 1)
        x = F.dropout(F.relu(self.fc1(x)), p=0.5, training=self.training)
        return self.fc2(x) / self.temperature


class Augmented(Dataset):
    def __init__(self, images, labels, seed=0):
        self.images, self.labels = images, labels
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index]
        if self.rng.random() < 0.5:
            image = torch.flip(image, dims=[-1])
        return image, self.labels[index]


def seed_worker(worker_id):
    info = get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)
    random.seed(info.seed)


def collate(batch):
    images, labels = zip(*batch)
    return torch.stack(images), torch.tensor(labels)


def train(args, model, device, loader, optimizer, scaler, epoch):
    model.train()
    running = 0.0
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", enabled=args.amp):
            output = model(data)
            loss = F.cross_entropy(output, target, label_smoothing=0.1)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        scaler.step(optimizer)
        scaler.update()
        running += loss.item()
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]\tLoss: {loss.item():.6f}")
    return running / len(loader)


def test(model, device, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.cross_entropy(output, target, reduction="sum").item()
            probs = F.softmax(output, dim=1)
            correct += probs.argmax(dim=1).eq(target).sum().item()
    loss = torch.tensor([test_loss, correct], device=device)
    if dist.is_initialized():
        dist.all_reduce(loss)
    return loss[0].item() / len(loader.dataset), loss[1].item()


def save_checkpoint(state, is_best, rank, filename="checkpoint.pth.tar"):
    if rank == 0:
        torch.save(state, filename)
        if is_best:
            shutil.copyfile(filename, "model_best.pth.tar")


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=14)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("-j", "--workers", type=int, default=4)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    distributed = "WORLD_SIZE" in os.environ
    rank = 0
    if distributed:
        dist.init_process_group("nccl")
        rank = dist.get_rank()
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    images, labels = torch.randn(512, 1, 28, 28), torch.randint(0, 10, (512,))
    train_set = Augmented(images, labels)
    sampler = DistributedSampler(train_set) if distributed else None
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=sampler is None, sampler=sampler,
                              num_workers=args.workers, worker_init_fn=seed_worker, collate_fn=collate,
                              pin_memory=True, persistent_workers=args.workers > 0)
    test_loader = DataLoader(Augmented(images, labels), batch_size=1000, num_workers=args.workers,
                             worker_init_fn=seed_worker, collate_fn=collate)
    model = Net().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    scaler = torch.amp.GradScaler("cuda", enabled=args.amp)
    start_epoch, best = 1, 0.0
    if args.resume:
        checkpoint = torch.load(args.resume, map_location=device, weights_only=True)
        missing, unexpected = model.load_state_dict(checkpoint["state_dict"], strict=False)
        if unexpected:
            raise SystemExit(f"checkpoint does not fit the model: {unexpected}")
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"] + 1
    for epoch in range(start_epoch, args.epochs + 1):
        if sampler is not None:
            sampler.set_epoch(epoch)
        train(args, model, device, train_loader, optimizer, scaler, epoch)
        loss, correct = test(model, device, test_loader)
        scheduler.step()
        is_best = correct > best
        best = max(correct, best)
        save_checkpoint({"epoch": epoch, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict()},
                        is_best, rank)
        if distributed:
            dist.barrier()


if __name__ == "__main__":
    main()
