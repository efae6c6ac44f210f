"""Diagnoses: one package per failure class (``timeout``, ``gpu_crash``, ``deadlock``,
``throughput``, ``loss_spike``) and ``triage`` over them, each in one shape:
``analyse(incident, **knobs) -> <Class>Analysis`` (the tables and values its runbook shows),
``report(analysis) -> Report`` (findings, verdict, actions) and ``diagnose = report ∘ analyse``.
``collectives`` and ``common`` hold the cross-rank comparisons and small helpers they share.
"""
