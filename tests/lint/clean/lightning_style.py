"""A LightningModule with automatic and manual optimisation (correct code: lint must stay silent)."""
import lightning as L
import torch
import torch.nn.functional as F
from torch import nn


class LitClassifier(L.LightningModule):
    def __init__(self, hidden=64, lr=1e-3):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = nn.Sequential(nn.Linear(28 * 28, hidden), nn.ReLU(), nn.Dropout(0.1))
        self.head = nn.Linear(hidden, 10)
        self.heads = nn.ModuleDict({"aux": nn.Linear(hidden, 2)})

    def forward(self, x):
        return self.head(self.backbone(x.view(x.size(0), -1)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        probs = torch.softmax(self(x), dim=-1)
        self.log("val_acc", (probs.argmax(-1) == y).float().mean())

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
        return [optimizer], [scheduler]


class ManualGAN(L.LightningModule):
    def __init__(self, generator, discriminator):
        super().__init__()
        self.automatic_optimization = False
        self.generator, self.discriminator = generator, discriminator

    def training_step(self, batch, batch_idx):
        g_opt, d_opt = self.optimizers()
        z = torch.randn(batch.size(0), 16, device=self.device)
        fake = self.generator(z)
        g_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake), torch.ones(batch.size(0), 1, device=self.device))
        g_opt.zero_grad()
        self.manual_backward(g_loss)
        self.clip_gradients(g_opt, gradient_clip_val=1.0)
        g_opt.step()
        real_loss = F.binary_cross_entropy_with_logits(self.discriminator(batch), torch.ones(batch.size(0), 1, device=self.device))
        fake_loss = F.binary_cross_entropy_with_logits(self.discriminator(fake.detach()), torch.zeros(batch.size(0), 1, device=self.device))
        d_opt.zero_grad()
        self.manual_backward((real_loss + fake_loss) / 2)
        d_opt.step()

    def configure_optimizers(self):
        return (torch.optim.Adam(self.generator.parameters(), lr=2e-4),
                torch.optim.Adam(self.discriminator.parameters(), lr=2e-4))
