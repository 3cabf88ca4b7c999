"""The official ``openai`` client, built so that every client of a process shares one TLS context.

``openai.OpenAI()`` builds a new TLS context for each client and loads the whole CA store into it: about 40 ms
of CPU per client, where a run builds a backend per unit (and a ToolSandbox unit a second client for its
user). :func:`openai_client` gives each client an HTTP client of its own (its own connection pool and
timeouts) on one TLS context per process, built once by the client's own HTTP library (``httpx``, or
``httpx2`` in recent releases) exactly as its default is: the same CA store, with ``SSL_CERT_FILE`` and
``SSL_CERT_DIR`` read when the first client is built. A library without ``create_ssl_context`` gets the
client's default construction.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import ssl
from typing import Any

from prefix_exec.extras import install_hint
from prefix_exec.json_types import JsonObject


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


@functools.cache
def _http_client_class() -> Any:
    """``openai.DefaultHttpxClient`` closed when it is collected, as the client's own default HTTP client is (a
    client's ``with_options()`` and ``copy()`` share it, so it is closed when the last of them goes)."""
    base: Any = import_openai().DefaultHttpxClient

    class ClosedWhenCollected(base):  # type: ignore[misc]
        def __del__(self) -> None:
            if not self.is_closed:
                with contextlib.suppress(Exception):  # at interpreter exit its modules may be gone already
                    self.close()

    return ClosedWhenCollected


def openai_client(*, base_url: str, api_key: str, timeout_s: float, max_retries: int) -> Any:
    """An ``openai.OpenAI`` client for ``base_url`` on an HTTP client of its own (see the module docstring)."""
    openai = import_openai()
    context = _tls_context()
    options: JsonObject = {}
    if context is not None:
        options["http_client"] = _http_client_class()(verify=context)
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=max_retries, **options)
