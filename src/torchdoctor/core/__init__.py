"""The core every command stands on: findings, rules, configuration, reports.

Nothing in this package imports torch, so `lint`, `rules` and the renderers stay fast.
"""
