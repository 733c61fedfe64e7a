"""Pitfall: expensive features computed in `__getitem__`, in the training process, every epoch.

Each clip's spectrogram is computed when the sample is read, with no worker processes: every
training step first waits while the DataLoader runs 32 short-time Fourier transforms, one
after another, in the process that trains. The features never change, so computing them once
(or in worker processes) leaves the step to the model.
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

NUM_CLASSES = 4


class Clips(Dataset):
    def __init__(self, n=128, length=16000, seed=0):
        gen = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
        time = torch.arange(length) / 16000
        pitch = 220.0 * (1 + self.labels.float()).view(n, 1)
        self.clips = torch.sin(2 * torch.pi * pitch * time) + 0.5 * torch.randn(n, length, generator=gen)
        self.window = torch.hann_window(1024)

    def __len__(self):
        return len(self.labels)

    def spectrogram(self, clip):
        return torch.stft(clip, n_fft=1024, hop_length=64, window=self.window, return_complex=True).abs().log1p()

    def __getitem__(self, i):
        return self.spectrogram(self.clips[i]), self.labels[i]


def make():
    torch.manual_seed(0)
    model = nn.Sequential(nn.AvgPool1d(8), nn.Conv1d(513, 32, 3), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                          nn.Linear(32, NUM_CLASSES))
    loader = DataLoader(Clips(), batch_size=32, shuffle=True)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return {"model": model, "data": loader, "loss_fn": nn.CrossEntropyLoss(), "optimizer": optimizer}


def train(steps=200):
    setup = make()
    model, loader, loss_fn, optimizer = setup["model"], setup["data"], setup["loss_fn"], setup["optimizer"]
    step = 0
    while step < steps:
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 50 == 0:
                print(f"step {step}: loss {loss.item():.4f}")
            if step == steps:
                break
    return loss.item()


if __name__ == "__main__":
    train()
