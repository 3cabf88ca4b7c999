"""Records: the files prefix-exec reads and writes, and their canonical form.

- :mod:`.jsonl`: JSON Lines mechanics (bounded reading, the crash-safe writer, what a file already holds);
- :mod:`.codec`: rollouts and prefix records to and from their JSON form, the only place they are written or read;
- :mod:`.outputs`: outputs that are locked, never an input, never written through a link;
- :mod:`.redaction`: credentials removed before anything reaches a file;
- :mod:`.sqlite_file`: a SQLite file opened the same careful way (the model cache, the runner's plan);
- :mod:`.consistency`: the report of where a replay and the recorded run disagree;
- :mod:`.infrastructure`: the one rule for rollouts the system's failure ended (marked, labelled, left out or kept).

Nothing here knows a benchmark, a metric or an agent (the codec knows only the dataset names of tau3's layout
before pooling, to refuse them). Everything here imports only :mod:`prefix_exec.trajectory` and below.
"""
