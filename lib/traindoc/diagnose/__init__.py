"""Diagnoses: pure functions from an ``Incident`` (and parameters) to a ``Report``.

One module per failure class (``timeout``, …); ``collectives`` and ``common`` hold the
cross-rank comparisons and small facts they share.
"""
