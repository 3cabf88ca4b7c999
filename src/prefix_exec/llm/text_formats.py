"""Readers of the tool-call formats models write in text, one per format; none evaluates model text.

A reader takes an answer's text and returns ``None`` when the text is not in its format (prose, JSON data that
is not a call, another format), or a :class:`Reading`: the prose left and the calls read. Text that is in the
format but does not parse is a call with ``parse_error`` and ``raw`` (the text quoted), which replay scores as
a ``schema`` failure. The formats (``name`` is a string, ``arguments`` a JSON object; a JSON string holding an
object is accepted too, as some models double-encode it):

- ``hermes`` (Hermes, Qwen): ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks anywhere in
  the answer, a Markdown fence inside allowed. A block counts (closed, or cut off by the end of the answer)
  only when its body starts like a call (``{``, maybe after a fence's opening line): a tag mentioned in prose
  (``Use <tool_call>...</tool_call> to call``) is prose. A missing ``arguments`` is ``{}``.

- ``json``: the answer starts with a JSON object ``{"name", "arguments"}`` or a list of them; more objects may
  follow, separated by white space. Text after them is prose. JSON that is no call (no ``name`` and
  ``arguments`` keys) is prose. JSON that does not parse is a failed call only when both keys come before the
  point where it breaks (it started a call); prose that opens with ``{`` and names them later is prose.
- ``fenced``: the ``json`` format inside Markdown code fences (```` ```json ... ``` ````, any language or none,
  on one line or several, the last one possibly unclosed), prose around them.
- ``llama`` (Llama 3.x): ``<|python_tag|>`` followed by JSON objects ``{"name", "parameters"}`` (or
  ``"arguments"``) separated by ``;``, or the same objects without the tag when they use ``"parameters"``.
  Built-in tools' Python syntax after the tag (``brave_search.call(...)``) is a parse error.
- ``mistral``: ``[TOOL_CALLS]`` followed by a JSON list (or object) of ``{"name", "arguments"}``, or by
  ``NAME[ARGS]{...}`` (newer Mistral templates; ``[TOOL_CALLS]`` repeated per call). Text before it is prose.
- ``pythonic`` (Llama 3.2/4, vLLM's ``pythonic``): the answer is a Python list of calls with keyword
  arguments, ``[get_weather(city="Paris", days=3), now()]``, optionally between ``<|python_start|>`` and
  ``<|python_end|>``. It is parsed with :mod:`ast` and each argument read with :func:`ast.literal_eval`:
  literals only (strings, numbers, booleans, ``None``, lists, tuples, dicts with string keys); a name, an
  attribute, a call or an operator as a value is a parse error. Nothing is evaluated.

Where a tag or a fence already marks the text as calls (``hermes``, ``fenced``, ``mistral``, ``llama`` after its
tag), the arguments may also be spelled ``"parameters"``: small models mix the two (a real model behind
llama-server wrote ``[TOOL_CALLS] [{"name": "ls", "parameters": {...}}]``, tests/data/model-outputs/).

Bounds (:mod:`prefix_exec.llm.text_reading`), so hostile text can neither hang a reader nor blow memory: a
reader reads at most ``MAX_CALLS`` calls and a failed call quotes at most ``MAX_RAW_CHARS`` of its text; JSON
nested past Python's recursion limit, or with more digits than Python's int limit, is a parse error; pythonic
text is bounded before the parser sees it (:mod:`prefix_exec.llm.pythonic`). Regular expressions here are
linear: no nested quantifiers.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from prefix_exec.llm.pythonic import read_pythonic
from prefix_exec.llm.text_reading import MAX_CALLS, Reading, failed, json_reason
from prefix_exec.trajectory import ToolCall

__all__ = ["READERS"]

_BLOCK = re.compile(r"<tool_call>(.*?)(</tool_call>|\Z)", re.DOTALL)
_FENCE_LANGUAGE = re.compile(r"[\w-]*")  # the language tag after a fence's opening ```
_FENCE = re.compile(r"```[\w-]*\s*(.*?)(?:```|\Z)", re.DOTALL)
#: A ``<tool_call>`` block's body that starts like a call: a JSON object, maybe after a fence's opening line.
_CALL_BODY = re.compile(r"\s*(?:```[\w-]*\s*)?\{")
_JSON_START = re.compile(r"\{|\[\s*\{")  # an object, or a list of objects: "[1, 2]" or "[see]" is prose
_DECODER = json.JSONDecoder()
_WHITE = " \t\r\n"
_PYTHON_TAG, _MISTRAL_TAG, _ARGS_TAG = "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]"
_LLAMA_ENDS = ("<|eom_id|>", "<|eot_id|>")
#: The arguments' key where a tag or a fence already says "this is a call": models mix the two spellings.
_EITHER = ("arguments", "parameters")


def _has_key(text: str, key: str) -> bool:
    return re.search(rf'"{key}"\s*:', text) is not None


def _shaped(item: object, keys: Sequence[str]) -> bool:
    """Whether ``item`` looks like a call: an object with ``name`` and one of ``keys``."""
    return isinstance(item, dict) and "name" in item and any(k in item for k in keys)


def _call_of(item: object, raw: str, keys: Sequence[str], *, missing_is_empty: bool = False) -> ToolCall:
    """The call one parsed object makes: ``{"name": str, KEY: object}``, KEY the first of ``keys`` present."""
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        return failed(raw, "tool call must be an object with a string 'name'")
    key = next((k for k in keys if k in item), None)
    if key is None and not missing_is_empty:
        return failed(raw, f"tool call has no '{keys[0]}'")
    arguments = item[key] if key is not None else {}
    if isinstance(arguments, str):  # some models double-encode the arguments object
        with contextlib.suppress(ValueError, RecursionError):
            arguments = json.loads(arguments)
    if not isinstance(arguments, dict):
        return failed(raw, f"tool call '{key}' must be a JSON object")
    return ToolCall(name=item["name"], arguments=arguments, raw=raw)


def _json_calls(text: str, keys: Sequence[str], *, claimed: bool, separators: str = "") -> Reading | None:
    """Calls written as consecutive JSON values at the start of ``text`` (white space and ``separators``
    between them); the first value that is no call, and all after it, is prose.

    ``claimed``: the text is known to be calls (a tag said so), so a first value that is no call is a parse
    error rather than prose. Unclaimed text whose first value does not parse is a failed call only when it has
    the keys of a call (``name`` and one of ``keys``); otherwise it is prose.
    """
    calls: list[ToolCall] = []
    pos = 0
    while len(calls) < MAX_CALLS:
        while pos < len(text) and (text[pos] in _WHITE or (calls and text[pos] in separators)):
            pos += 1
        if pos >= len(text) or text[pos] not in ("{[" if not calls else "{"):
            break
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:  # also digits past Python's int limit
            rest = text[pos:]
            # Unclaimed, the keys must come before the error: prose that names them later is no call.
            began = text[pos : exc.pos] if isinstance(exc, json.JSONDecodeError) else rest
            if claimed or (_has_key(began, "name") and any(_has_key(began, key) for key in keys)):
                calls.append(failed(rest, f"tool call is not valid JSON ({json_reason(exc)})"))
                pos = len(text)
            break
        items = value if isinstance(value, list) else [value]
        if not any(_shaped(item, keys) for item in items):
            if claimed and not calls:
                calls.append(failed(text[pos:end], f'expected tool calls {{"name", "{keys[0]}"}}'))
                pos = end
            break
        for item in items[: MAX_CALLS - len(calls)]:
            raw = text[pos:end] if len(items) == 1 else json.dumps(item, ensure_ascii=False)
            calls.append(_call_of(item, raw, keys))
        pos = end
    if not calls:
        return None
    return Reading(text[pos:].strip() or None, tuple(calls))


def read_hermes(text: str) -> Reading | None:
    """``<tool_call>`` blocks (see the module docstring)."""
    blocks = [m for m in _BLOCK.finditer(text) if _CALL_BODY.match(m.group(1))]
    if not blocks:
        return None
    calls: list[ToolCall] = []
    for match in blocks[:MAX_CALLS]:
        body = _unfenced(match.group(1).strip())
        try:
            data: Any = json.loads(body)
        except (ValueError, RecursionError) as exc:
            calls.append(failed(body, f"tool call is not valid JSON ({json_reason(exc)})"))
            continue
        calls.append(_call_of(data, body, _EITHER, missing_is_empty=True))
    for match in reversed(blocks[:MAX_CALLS]):
        text = text[: match.start()] + text[match.end() :]
    return Reading(text.strip() or None, tuple(calls))


def _unfenced(body: str) -> str:
    """``body`` without a Markdown code fence around it (```` ```json ... ``` ````): the opening ``` and its
    language tag, and the closing ``` that ends ``body``; the call may start on the fence's own line, as in
    :func:`read_fenced`.

    No regular expression spans the body: one did, and a block of an opening fence and a few thousand newlines
    made it backtrack for minutes (quadratic or worse in the newlines)."""
    if len(body) < 6 or not (body.startswith("```") and body.endswith("```")):
        return body
    inner = body[3:-3]
    language = _FENCE_LANGUAGE.match(inner)
    return inner[language.end() if language else 0 :].strip()


def read_json(text: str, keys: Sequence[str] = ("arguments",)) -> Reading | None:
    """A bare JSON object or list of ``{"name", "arguments"}`` at the start of the answer (``keys``: the
    arguments' key or keys accepted)."""
    stripped = text.strip()
    if not _JSON_START.match(stripped):
        return None
    return _json_calls(stripped, keys, claimed=False)


def read_fenced(text: str) -> Reading | None:
    """``json``-format calls inside Markdown fences; a fence holding anything else stays in the prose."""
    calls: list[ToolCall] = []
    spans: list[tuple[int, int]] = []
    for match in _FENCE.finditer(text):
        if len(calls) >= MAX_CALLS:
            break
        found = read_json(match.group(1), _EITHER)
        if found is not None:
            calls += found.calls[: MAX_CALLS - len(calls)]
            spans.append(match.span())
    if not calls:
        return None
    for start, end in reversed(spans):
        text = text[:start] + text[end:]
    return Reading(text.strip() or None, tuple(calls))


def read_llama(text: str) -> Reading | None:
    """Llama 3.x JSON calls, after ``<|python_tag|>`` or bare with ``"parameters"``."""
    stripped = text.strip()
    tagged = stripped.startswith(_PYTHON_TAG)
    if tagged:
        stripped = stripped[len(_PYTHON_TAG) :].strip()
        for end in _LLAMA_ENDS:
            stripped = stripped.removesuffix(end).rstrip()
        if not stripped.startswith(("{", "[")):
            return Reading(None, (failed(stripped, f"expected JSON tool calls after {_PYTHON_TAG}"),))
        return _json_calls(stripped, ("parameters", "arguments"), claimed=True, separators=";")
    if not stripped.startswith("{"):
        return None
    return _json_calls(stripped, ("parameters",), claimed=False, separators=";")


def read_mistral(text: str) -> Reading | None:
    """Mistral's ``[TOOL_CALLS]`` followed by a JSON list, or by ``NAME[ARGS]{...}`` per call."""
    at = text.find(_MISTRAL_TAG)
    if at < 0:
        return None
    prose, rest = text[:at].strip(), text[at + len(_MISTRAL_TAG) :].strip()
    if rest.startswith(("[", "{")):
        # Claimed text always reads as calls; the fallback only spells that out for the type checker.
        found = _json_calls(rest, _EITHER, claimed=True) or Reading(None, (failed(rest, "no tool call"),))
        after = found.prose
    else:
        found = Reading(None, tuple(_named_call(part.strip()) for part in rest.split(_MISTRAL_TAG)[:MAX_CALLS]))
        after = None
    joined = "\n".join(p for p in (prose, after) if p)
    return Reading(joined or None, found.calls)


def _named_call(part: str) -> ToolCall:
    """One ``NAME[ARGS]{...}`` call of the newer Mistral format."""
    name, tag, arguments = part.partition(_ARGS_TAG)
    if not tag or not name.strip():
        return failed(part, f"expected NAME{_ARGS_TAG}{{...}} after {_MISTRAL_TAG}")
    try:
        data = json.loads(arguments)
    except (ValueError, RecursionError) as exc:
        return failed(part, f"tool call arguments are not valid JSON ({json_reason(exc)})", name=name.strip())
    return _call_of({"name": name.strip(), "arguments": data}, part, ("arguments",))


#: Each format's reader, by the name a grid's ``text_format`` uses.
READERS: dict[str, Callable[[str], Reading | None]] = {
    "hermes": read_hermes,
    "json": read_json,
    "fenced": read_fenced,
    "llama": read_llama,
    "mistral": read_mistral,
    "pythonic": read_pythonic,
}
