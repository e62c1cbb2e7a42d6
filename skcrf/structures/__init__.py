"""Structures: one module per model family (plain Python and numpy).

A structure owns its parameter layout (named blocks of the flat weight vector),
turns (features, weights) into potentials for :mod:`skcrf.inference`, turns
marginals back into a gradient, and computes the gold statistics.
"""
