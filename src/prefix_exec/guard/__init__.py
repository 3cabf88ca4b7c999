"""A runtime guard: check a candidate tool call against the live environment before it executes.

:func:`prefix_exec.replay.check` runs the call on a fork of the session, so the live state never changes, and
returns the environment's verdict (a call the model's output could not be parsed into is a ``schema`` rejection
without reaching the environment). An agent can then execute only accepted calls and hand rejections back to
the model as feedback; that is the ``guarded-react`` variant. The cost is one fork and one extra step per call.
The check lives with the replay, below the agents that use it; this package is the MCP proxy alone.

The same check guards agents we do not run: ``prefix-exec guard`` (docs/guard.md) is an MCP proxy that
checks every ``tools/call`` before the real server sees it and records the connection for scoring. Its modules,
one per concern, need the ``[guard]`` extra (the MCP SDK) and are imported only by that command:

- :mod:`.shadow`: the guard's picture of one MCP connection (the environment from the server's tools and the
  side file, the live session) and the verdicts;
- :mod:`.block`: the text a blocked call returns, in words a model can act on;
- :mod:`.log` and :mod:`.journal`: one connection as a rollout and a record, and the append-only journal
  ``--record`` writes; :mod:`.rebuild`, the scoring files derived from the journals (``--rebuild``);
  :mod:`.folder`, the record folder held as a directory handle; :mod:`.bounds`, how much of a result is kept;
- :mod:`.pump`: the message pump between client and server that intercepts ``tools/list`` and ``tools/call``,
  and :mod:`.messages`, the JSON-RPC pieces it answers with;
- :mod:`.connection` and :mod:`.options`: one guarded connection's parts, and the settings;
- :mod:`.stdio` (with :mod:`.pipes`, our ends of the client's pipes) and :mod:`.http`: the two transports, on
  the SDK's own.
"""
