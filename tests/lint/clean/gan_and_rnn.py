"""A DCGAN step and a word-level LSTM language model (correct code: lint must stay silent)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Generator(nn.Module):
    def __init__(self, nz=16, nf=32):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(nz, nf), nn.ReLU(True), nn.Linear(nf, 64), nn.Tanh())

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(64, 32), nn.LeakyReLU(0.2, inplace=True), nn.Linear(32, 1))

    def forward(self, x):
        return self.main(x).view(-1)


def train_gan(loader, epochs, device, nz=16):
    netG, netD = Generator(nz).to(device), Discriminator().to(device)
    criterion = nn.BCEWithLogitsLoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    for epoch in range(epochs):
        for i, (real, _) in enumerate(loader):
            real = real.to(device)
            netD.zero_grad()
            label = torch.full((real.size(0),), 1.0, device=device)
            errD_real = criterion(netD(real), label)
            errD_real.backward()
            fake = netG(torch.randn(real.size(0), nz, device=device))
            label.fill_(0.0)
            errD_fake = criterion(netD(fake.detach()), label)
            errD_fake.backward()
            optimizerD.step()
            netG.zero_grad()
            label.fill_(1.0)
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            optimizerG.step()
            if i % 50 == 0:
                d_x = torch.sigmoid(output).mean().item()
                print(f"[{epoch}][{i}] Loss_D: {(errD_real + errD_fake).item():.4f} Loss_G: {errG.item():.4f} D(G(z)): {d_x:.4f}")


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp=64, nhid=64, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.decoder.out_features)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def train_lm(model, batches, ntokens, lr, clip, epochs):
    criterion = nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        model.train()
        total_loss = 0.0
        hidden = model.init_hidden(20)
        for data, targets in batches:
            hidden = repackage_hidden(hidden)
            model.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            total_loss += loss.item()
        model.eval()
        with torch.no_grad():
            val_loss = sum(criterion(model(d, model.init_hidden(20))[0], t).item() for d, t in batches)
        print(f"epoch {epoch}: train {total_loss:.2f} val {val_loss:.2f}")
