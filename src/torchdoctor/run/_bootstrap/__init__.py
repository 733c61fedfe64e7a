"""The folder `torchdoctor run` puts first on PYTHONPATH, so every Python it starts observes itself.

It holds only `sitecustomize.py`, which Python imports at start-up in every process that
inherits the environment: the script, DataLoader workers started with spawn/forkserver,
`torch.multiprocessing.spawn` children and the ranks `torchrun` starts.
"""
