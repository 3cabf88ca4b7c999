"""The no-key, no-network demo: fault-injected BFCL ground truth scored by the real BFCL environment.

- :mod:`.mutations`: the documented fault-injection operators, one or more per failure label;
- :mod:`.agents`: synthetic "agents" (seeded operator mixes) standing in for methods;
- :mod:`.bfcl`: ground truth, docs, the raw-API witness and BFCL's final success;
- :mod:`.calibration`: injected against detected label and depth;
- :mod:`.pipeline`: the pipeline behind ``prefix-exec demo`` (:func:`~.pipeline.write_demo`).
"""
