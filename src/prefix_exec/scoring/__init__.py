"""Scoring: ``(rollout, environment)`` pairs replayed into a locked, resumable records file.

:mod:`.run` is the single-process path; :mod:`.pool` adds worker processes and Ray actors for ``--workers N``.
"""
