"""The official ``openai`` client, built so that every client of a process shares one TLS context.

``openai.OpenAI()`` builds a new TLS context for each client and loads the whole CA store into it: about 40 ms
of CPU per client, where a run builds a backend per unit (and a ToolSandbox unit a second client for its
user). :func:`openai_client` gives each client an HTTP client of its own (its own connection pool and
timeouts) on one TLS context per process, built once by the client's own HTTP library (``httpx``, or
``httpx2`` in openai 2 and later) exactly as its default is: the same CA store, with ``SSL_CERT_FILE`` and
``SSL_CERT_DIR`` read when the first client is built. A library without ``create_ssl_context`` gets the
client's default construction.
"""

from __future__ import annotations

import functools
import importlib
import ssl
import weakref
from typing import Any

from prefix_exec.extras import install_hint


def import_openai() -> Any:
    """The ``openai`` module, or an :class:`ImportError` that says how to install it."""
    try:
        import openai
    except ImportError:
        raise ImportError(f"running agents needs the openai client: {install_hint('openai')}") from None
    return openai


@functools.cache
def _tls_context() -> ssl.SSLContext | None:
    """The process's TLS context, made by the HTTP library that ``openai.DefaultHttpxClient`` is built on."""
    openai = import_openai()
    library = importlib.import_module(openai.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0])
    create = getattr(library, "create_ssl_context", None)
    return create() if callable(create) else None


def openai_client(*, base_url: str, api_key: str, timeout_s: float, max_retries: int) -> Any:
    """An ``openai.OpenAI`` client for ``base_url``; its HTTP client is closed when the client is collected,
    as the client's own default HTTP client is."""
    openai = import_openai()
    context = _tls_context()
    if context is None:
        return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries)
    http = openai.DefaultHttpxClient(verify=context)
    client = openai.OpenAI(
        base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries, http_client=http
    )
    weakref.finalize(client, http.close)
    return client
