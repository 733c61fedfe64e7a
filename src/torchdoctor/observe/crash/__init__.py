"""Crash explanations: an uncaught exception, explained at the user's line with cause and fix.

torch-free at import: a script can crash before it ever imports torch.
"""
