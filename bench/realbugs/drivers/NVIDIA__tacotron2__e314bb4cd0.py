"""Computes mel-spectrograms of random audio with layers.TacotronSTFT (what the data loader does),
with a window shorter than the FFT (win_length=800, filter_length=1024), then round-trips the
STFT (stft.STFT.forward)."""
import torch
from layers import TacotronSTFT

torch.manual_seed(0)
stft = TacotronSTFT(filter_length=1024, hop_length=256, win_length=800,
                    n_mel_channels=80, sampling_rate=22050, mel_fmin=0.0, mel_fmax=8000.0)
audio = torch.rand(2, 22050) * 2 - 1
mel = stft.mel_spectrogram(audio)
print("mel", tuple(mel.shape), float(mel.mean()))
recon = stft.stft_fn(audio)
print("reconstruction", tuple(recon.shape), float(recon.abs().mean()))
