"""torchdoctor check: the health check of a model, its data, loss and optimizer.

The public API is `torchdoctor.check(model, data, loss_fn=None, optimizer=None, **options)`
(`torchdoctor.health.api.check`); `torchdoctor check TARGET` is `torchdoctor.health.command`.
The package is called `health` rather than `check` so that importing it never replaces the
public `torchdoctor.check` function with a module.
"""
