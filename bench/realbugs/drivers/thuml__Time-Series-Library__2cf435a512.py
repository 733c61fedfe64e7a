"""Builds Autoformer (models/Autoformer.py) for long-term forecasting with a small configuration,
trains it one step and then forecasts in eval mode, on a CPU, with random series and time marks."""
from types import SimpleNamespace

import torch
from models.Autoformer import Model

torch.manual_seed(0)
cfg = SimpleNamespace(task_name="long_term_forecast", seq_len=32, label_len=16, pred_len=8, moving_avg=5,
                      enc_in=3, dec_in=3, c_out=3, d_model=16, n_heads=2, e_layers=1, d_layers=1, d_ff=32,
                      factor=1, dropout=0.1, embed="timeF", freq="h", activation="gelu", num_class=2)
model = Model(cfg)
B = 4
x_enc, x_mark_enc = torch.randn(B, cfg.seq_len, 3), torch.randn(B, cfg.seq_len, 4)
y = torch.randn(B, cfg.label_len + cfg.pred_len, 3)
x_mark_dec = torch.randn(B, cfg.label_len + cfg.pred_len, 4)
x_dec = torch.cat([y[:, :cfg.label_len], torch.zeros(B, cfg.pred_len, 3)], dim=1)

optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
loss = torch.nn.functional.mse_loss(model(x_enc, x_mark_enc, x_dec, x_mark_dec), y[:, -cfg.pred_len:])
loss.backward()
optimizer.step()
model.eval()
with torch.no_grad():
    pred = model(x_enc, x_mark_enc, x_dec, x_mark_dec)
print("forecast", tuple(pred.shape), "train loss", loss.item())
