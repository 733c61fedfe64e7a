"""How the session sees a training run: each module installs one kind of PyTorch hook or
stand-in, keeps what the detectors need to know, and undoes itself (torch imported here)."""
