"""Analysis: statistics over prefix records, tied to the paper's equations.

- :mod:`.rows`: the rows the metrics read (:class:`~.rows.MetricRow`), from any JSONL that has their fields;
- :mod:`.metrics`: PEC, FED, TER, AUC-PEC and RR as pure functions;
- :mod:`.stats`: the one bounded, paired percentile bootstrap and Wilson intervals;
- :mod:`.summary`: the metrics of records per condition, with their intervals;
- :mod:`.selection`, :mod:`.tasksets`, :mod:`.coverage`: which records and tasks a comparison takes.
"""
