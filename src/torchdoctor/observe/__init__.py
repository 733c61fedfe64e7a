"""The observation engine: the session, its events, the detectors, the instruments that patch
torch, the crash and memory explainers. `torchdoctor run` (run/) drives it in every process of a
job; `watch()`, `trace` and the framework callbacks drive it in their own process."""
