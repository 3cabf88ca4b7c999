"""Recorded outcomes as evidence: whether what a log recorded of a call says the tool refused it, with which label.

A reader puts what the log recorded for a call on ``ToolCall.observation`` (:class:`~prefix_exec.trajectory.
Observation`: ``content``, the log's ``error`` flag or ``None``, ``error_type``) and decides nothing. This module
decides, for the generic environment (:class:`prefix_exec.envs.custom.session.CustomSession`) and the guard:

- :class:`EvidencePolicy`: ``error_pattern`` (``--error-pattern REGEX``, default :data:`DEFAULT_ERROR_PATTERN`;
  ``None`` for ``--no-error-pattern``) and ``require_tools`` (``--require-tools``);
- :func:`refusal`: is this observation a recorded refusal? The log's flag decides when it has one (``error``
  true: refused; false: not). Only a reply without a flag (``error`` is ``None``: a plain-text tool message) is
  matched against the error pattern, searched in the first :data:`TEXT_CHARS` characters of its text (a list
  of text blocks as their text, :func:`blocks_text`; any other non-string content as its JSON text);
- :func:`classify`: the label of a refusal, from the error's type and text by the table :data:`RULES`, first
  match wins, type rules before text rules; nothing matched gives :data:`DEFAULT_LABEL`;
- :func:`recorded_value`: the recorded result as a JSON value, which feeds ``produces``: a string that parses as
  JSON is that value (a list of text blocks counts as its text), any other string is itself, a parsed value
  (an object, a list, MCP ``structuredContent``) is taken as it is;
- the verdict notes that say a verdict's origin, where it came from (:data:`ORIGIN_CHECK`, :func:`recorded_note`;
  the notes' text says ``source:``, as records have always written it), and the
  generic consistency comparison (:func:`compare_custom`, a :data:`~prefix_exec.records.consistency.Compare`
  under its default policy, ``functools.partial(compare_custom, policy=...)`` under another), which the
  consistency report (:mod:`prefix_exec.records.consistency`) runs on every record.

In words: the policy is :class:`EvidencePolicy` (the environment holds it: ``CustomEnvironment.policy``, set by
``load_spec(..., policy=)`` and ``environment_from_tools(..., policy=)``); "is this observation a recorded refusal"
is :func:`refusal`, which returns the :class:`Refusal` (label, rule, what said so, quoted reason and notes) or
``None``; the classifier is :func:`classify`; "the recorded result as a JSON value" is :func:`recorded_value`. The
CLI reads the options with ``prefix_exec.cli.spec_options.policy_of``.

Why ``precondition`` is the default label: the recorded outcome is consulted only after our own checks accepted
the call (tool, arguments against the schema, references), so a refusal that names no kind is most likely a
condition on the environment's state that the spec does not model, which is what ``precondition`` means. tau's
own table defaults an unlisted error to ``precondition`` for the same reason (:mod:`prefix_exec.envs.tau.labels`).

Why the default pattern is ``\\A\\s*(?:Error\\b|[\\w.]*(?:Error|Exception)\\b:)``: tau-bench's tools and tau2's
environment answer a refused call with a reply beginning ``Error: ...``, and harnesses that catch a Python
exception write its class first (AgentDojo: ``ValueError: Channel does not exist!``, pydantic's
``ValidationError: ...``, ``TypeError: ...``); matching at the very start (case-sensitive, the class name
followed by a colon) keeps results that merely mention an error, an ``errors`` field, or JSON, out.
An exception name at the start of the text is also the error's type when the log names none
(:func:`leading_exception`), so type rules read it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from prefix_exec.json_types import JsonValue
from prefix_exec.records.consistency import Disagreement
from prefix_exec.trajectory import RESULT_CHARS, FailureLabel, Observation, PrefixRecord, Verdict, excerpt

#: The default ``--error-pattern``: a reply whose text begins with the word ``Error`` (tau-bench's and tau2's
#: convention, ``"Error: user not found"``) or with an exception's class and a colon (``ValueError: ...``,
#: ``pydantic_core.ValidationError: ...``), after optional white space.
DEFAULT_ERROR_PATTERN = r"\A\s*(?:Error\b|[\w.]*(?:Error|Exception)\b:)"
#: An exception's class at the start of a recorded error's text (``KeyError: 'x'`` -> ``KeyError``).
LEADING_EXCEPTION = re.compile(r"\A\s*([A-Za-z_][\w.]*(?:Error|Exception)):")
#: How much of a reply the pattern and the classifier read, in characters: an error says what it is early, and a
#: huge result must not be scanned whole at every step.
TEXT_CHARS = 10_000
#: Longest recorded error quoted in a verdict's reason, in characters.
QUOTE_CHARS = 300
#: Longest recorded result text parsed as JSON for ``produces``; a longer one feeds nothing.
PARSE_CHARS = 1_000_000
#: Most values of one kind a recorded result registers for ``produces`` (a ``[*]`` path over a hostile list of
#: millions would otherwise hold them all); the accepted verdict notes a cut.
PRODUCED_VALUES = 10_000
#: The label of a refusal no rule of :data:`RULES` explains (see the module docstring).
DEFAULT_LABEL = FailureLabel.PRECONDITION

#: The note of a verdict that our own checks gave (accepted, or rejected by a check of ours).
ORIGIN_CHECK = "source: our check"
#: The start of the note of a verdict the recorded outcome gave (:func:`recorded_note`).
ORIGIN_RECORDED = "source: recorded outcome"


@dataclass(frozen=True)
class EvidencePolicy:
    """How recorded outcomes count: ``error_pattern`` decides unflagged replies (``None``: never a refusal), and
    ``require_tools`` makes a rollout without a tool call a failure whatever the spec says."""

    error_pattern: re.Pattern[str] | None = re.compile(DEFAULT_ERROR_PATTERN)
    require_tools: bool = False


DEFAULT_POLICY = EvidencePolicy()


def compile_pattern(text: str) -> re.Pattern[str]:
    """``text`` as a regular expression; a ``ValueError`` saying why when it is not one (``--error-pattern``)."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc})") from None


@dataclass(frozen=True)
class Rule:
    """One row of the classifier: a regex searched (case-insensitive) in the error's normalized ``type`` (its
    last dotted part, lower case, without ``_``, ``-`` or spaces: ``FileNotFoundError`` -> ``filenotfounderror``,
    inspect's ``file_not_found`` -> ``filenotfound``) or in its ``text``."""

    name: str
    label: FailureLabel
    on: str  # "type" or "text"
    pattern: str

    def matches(self, error_type: str, text: str) -> bool:
        subject = error_type if self.on == "type" else text
        return bool(subject) and re.search(self.pattern, subject, re.IGNORECASE) is not None


_S, _D, _P, _C = (
    FailureLabel.SCHEMA,
    FailureLabel.DEPENDENCY,
    FailureLabel.PRECONDITION,
    FailureLabel.STATE_CONSISTENCY,
)
#: The classifier's table, in the order rules are tried (docs/custom.md shows it).
RULES: tuple[Rule, ...] = (
    Rule(
        "argument error type",
        _S,
        "type",
        r"validation|pars(e|ing)|typeerror|jsondecode|syntaxerror|"
        r"invalid(argument|param|input|request)|schema|badrequest|unprocessable",
    ),
    Rule("not-found error type", _D, "type", r"notfound|doesnotexist|nosuch|lookuperror|keyerror|indexerror|nodata"),
    Rule("permission error type", _P, "type", r"permission|forbidden|unauthori[sz]ed|denied|approval|auth"),
    Rule("conflict error type", _C, "type", r"conflict|duplicate|exists|integrity|stale"),
    Rule(
        "unknown tool",
        _S,
        "text",
        r"\bunknown (tool|function|action|method)\b|\bno such (tool|function)\b|"
        r"\b(tool|function) '?[\w.-]*'? (is )?not found\b",
    ),
    Rule("validation error", _S, "text", r"\bvalidation (errors?|failed)\b|\bfailed validation\b|\bschema\b"),
    Rule(
        "missing argument",
        _S,
        "text",
        r"\bmissing (\d+ )?(required )?(positional |keyword )?"
        r"(argument|parameter|field|property)s?\b|\bis a required (property|argument|parameter|field)\b",
    ),
    Rule("unexpected argument", _S, "text", r"\bunexpected (keyword )?argument\b|\bunknown (argument|parameter)\b"),
    Rule(
        "invalid argument",
        _S,
        "text",
        r"\binvalid (argument|parameter|input|value|type|json|format)s?\b|"
        r"\bwrong (type|number of arguments)\b|\b(could not|cannot|can't|failed to|unable to) (parse|decode)\b",
    ),
    Rule(
        "format",
        _S,
        "text",
        r"\bdoes not match( the)? format\b|\bunconverted data remains\b|\b(bad|wrong|incorrect)( \w+)? format\b|"
        r"\binvalid literal for\b|\bcould not convert\b|\binvalid isoformat\b|\bexpected format\b",
    ),
    Rule("not found", _D, "text", r"\bnot found\b"),
    Rule(
        "nothing found",
        _D,
        "text",
        r"\bno\s+([\w'-]+\s+){0,4}(found|matched|matching|matches|match|available)\b|"
        r"\bno (record|entry|entries|result|match)(e?s)? for\b",
    ),
    Rule("unknown id", _D, "text", r"\b(unknown|invalid) ([\w-]+[ _])?id\b"),
    Rule("does not exist", _D, "text", r"\b(does|do|did)( not|n't) exist\b|\bno such\b|\bnon-?existent\b"),
    Rule("permission", _P, "text", r"\bpermission\b|\bforbidden\b|\bunauthori[sz]ed\b|\bdenied\b"),
    Rule("not allowed", _P, "text", r"\bnot (allowed|permitted|authori[sz]ed)\b"),
    Rule("must first", _P, "text", r"\bmust\b(\s+\S+){0,4}\s+first\b|\bnot (yet )?(logged in|authenticated)\b"),
    Rule("requires", _P, "text", r"\brequires\b"),
    Rule("already", _C, "text", r"\balready\b"),
    Rule("conflict", _C, "text", r"\bconflict"),
    Rule("duplicate", _C, "text", r"\bduplicate"),
    Rule("no longer", _C, "text", r"\bno longer\b"),
)
#: The rule name a classification without a matching rule reports.
DEFAULT_RULE = "default"


@dataclass(frozen=True)
class Classification:
    """A refusal's label and the name of the rule that gave it (:data:`DEFAULT_RULE` when none matched)."""

    label: FailureLabel
    rule: str


def classify(error_type: str | None, text: str) -> Classification:
    """The label of a recorded error of kind ``error_type`` (``None``: the log names none) with message
    ``text``: the first rule of :data:`RULES` that matches, else :data:`DEFAULT_LABEL`."""
    kind = _normalized_type(error_type)
    bounded = text[:TEXT_CHARS]
    for rule in RULES:
        if rule.matches(kind, bounded):
            return Classification(rule.label, rule.name)
    return Classification(DEFAULT_LABEL, DEFAULT_RULE)


def _normalized_type(error_type: str | None) -> str:
    if not error_type:
        return ""
    last = error_type[:200].strip().rsplit(".", 1)[-1]
    return re.sub(r"[\s_-]+", "", last).lower()


@dataclass(frozen=True)
class Refusal:
    """A recorded refusal: its label and classifier rule, what said it was one (``flag``: the log's error flag;
    ``pattern``: the error pattern matched the reply), and the recorded error's text and type."""

    label: FailureLabel
    rule: str
    by: str
    text: str
    error_type: str | None = None

    @property
    def reason(self) -> str:
        """The verdict's reason: the recorded error, quoted."""
        how = "the log's error flag" if self.by == "flag" else "the reply matches the error pattern"
        kind = f" [{self.error_type[:80]}]" if self.error_type else ""
        quote = self.text.strip()
        quote = json.dumps(quote[:QUOTE_CHARS] + ("..." if len(quote) > QUOTE_CHARS else "")) if quote else "no text"
        return f"the recorded outcome refused the call ({how}){kind}: {quote}"

    @property
    def notes(self) -> tuple[str, str]:
        return recorded_note(self.by), f"classifier: {self.rule} -> {self.label.value}"


def recorded_note(by: str) -> str:
    """The origin note of a verdict a recorded refusal gave (``by``: ``flag`` or ``pattern``)."""
    return f"{ORIGIN_RECORDED} ({'error flag' if by == 'flag' else 'error pattern'})"


def refusal(observation: Observation | None, policy: EvidencePolicy = DEFAULT_POLICY) -> Refusal | None:
    """The refusal ``observation`` records, or ``None`` (no observation, a success, or an unflagged reply the
    pattern does not match)."""
    if observation is None or observation.error is False:
        return None
    if observation.error:
        text = observation_text(observation)
        by = "flag"
    else:
        if policy.error_pattern is None:
            return None
        text = observation_text(observation)
        if policy.error_pattern.search(text) is None:
            return None
        by = "pattern"
    error_type = observation.error_type or leading_exception(text)
    found = classify(error_type, text)
    return Refusal(found.label, found.rule, by, text, error_type)


def leading_exception(text: str) -> str | None:
    """The exception class a recorded error's text begins with (``ValueError: ...`` -> ``ValueError``), or
    ``None``: harnesses that catch a tool's exception write ``f"{type(e).__name__}: {e}"``."""
    found = LEADING_EXCEPTION.match(text[:200])
    return found.group(1) if found else None


def observation_text(observation: Observation) -> str:
    """At most :data:`TEXT_CHARS` characters of the recorded content: a string as it is, ``None`` as ``""``,
    anything else as its JSON text (encoded only as far as needed)."""
    content = observation.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content[:TEXT_CHARS]
    blocks = blocks_text(content, TEXT_CHARS)
    if blocks is not None:
        return blocks[:TEXT_CHARS]
    parts: list[str] = []
    size = 0
    try:
        for chunk in json.JSONEncoder(default=str).iterencode(content):
            parts.append(chunk)
            size += len(chunk)
            if size >= TEXT_CHARS:
                break
    except (RecursionError, ValueError):  # nested past the recursion limit, or a circular value
        return ""
    return "".join(parts)[:TEXT_CHARS]


def blocks_text(content: JsonValue, limit: int) -> str | None:
    """The text of a reply written as a list of text blocks (``[{"type": "text", "text": ...}, ...]``: Anthropic
    ``tool_result``, OpenAI and LangChain content parts; AgentDojo writes ``content`` for ``text``), the blocks
    joined by newlines and cut after ``limit``
    + 1 characters; ``None`` for anything else (a list with another kind of block included)."""
    if not isinstance(content, list) or not content:
        return None
    texts = [
        b.get("text", b.get("content")) if isinstance(b, dict) and b.get("type") == "text" else None for b in content
    ]
    if not all(isinstance(text, str) for text in texts):
        return None
    parts: list[str] = []
    size = 0
    for text in texts:
        assert isinstance(text, str)  # checked above, for the type checker
        parts.append(text)
        size += len(text) + 1
        if size > limit:
            break
    return "\n".join(parts)[: limit + 1]


def recorded_value(observation: Observation | None) -> JsonValue:
    """The recorded result as a JSON value (``None`` when there is none): a string that parses as JSON gives that
    value, any other string itself; a longer string than :data:`PARSE_CHARS` gives ``None``; a parsed value
    (an object or a list, an MCP ``structuredContent``) is returned as it is."""
    if observation is None or observation.content is None:
        return None
    content = observation.content
    if not isinstance(content, str):
        blocks = blocks_text(content, PARSE_CHARS)
        if blocks is None:
            return content
        content = blocks
    if len(content) > PARSE_CHARS:
        return None
    try:
        return json.loads(content)
    except (ValueError, RecursionError):  # not JSON (plain text), or nested past the recursion limit
        return content


def origin_of(verdict: Verdict) -> str | None:
    """``check`` or ``recorded``: the origin of a verdict of the generic environment, where it came from
    (``None``: not said)."""
    for note in verdict.notes:
        if note == ORIGIN_CHECK:
            return "check"
        if note.startswith(ORIGIN_RECORDED):
            return "recorded"
    return None


def compare_custom(record: PrefixRecord, policy: EvidencePolicy = DEFAULT_POLICY) -> tuple[list[Disagreement], int]:
    """The generic comparison of one record (a :data:`prefix_exec.records.consistency.Compare`, ``policy`` bound by
    ``functools.partial``): our checks against the recorded outcome, over the replayed calls that have one.

    Kinds: ``recorded-refusal``, our checks accepted a call the log records as refused (the step was then
    rejected by the recorded outcome); ``extra-check``, a check of ours rejected a call the log records as a
    success (a check the tool does not make, or a spec stricter than the tool). A call both sides refused, or
    both accepted, agrees. Returns the entries and the number of calls compared.
    """
    found: list[Disagreement] = []
    calls = 0
    if record.no_tool:
        return found, calls
    for depth, (call, verdict) in enumerate(zip(record.actions, record.verdicts, strict=False), start=1):
        if call.observation is None:
            continue
        calls += 1
        recorded = origin_of(verdict) == "recorded"
        checks_accepted = verdict.accepted or recorded
        refused = recorded or refusal(call.observation, policy) is not None
        if checks_accepted != refused:
            continue
        found.append(
            Disagreement.of_call(
                record,
                depth,
                recorded_error=refused,
                recorded_content=_quoted(call.observation),
                replay_accepted=checks_accepted,
                replay_label=None if checks_accepted or verdict.label is None else verdict.label.value,
                replay_reason="" if checks_accepted else verdict.reason,
                kind="recorded-refusal" if checks_accepted else "extra-check",
            )
        )
    return found, calls


def _quoted(observation: Observation) -> JsonValue:
    """The recorded content as a report keeps it: a short value as it is, else its text cut (``excerpt``)."""
    content = observation.content
    if isinstance(content, str) or content is None:
        return excerpt(content) if content is not None else None
    text = observation_text(observation)
    return content if len(text) < TEXT_CHARS and len(text) <= RESULT_CHARS else excerpt(text)


def describe(policy: EvidencePolicy) -> str:
    """One line saying what counts as a recorded refusal under ``policy`` (for stderr)."""
    pattern = "no pattern" if policy.error_pattern is None else f"replies matching {policy.error_pattern.pattern!r}"
    return f"recorded error flags and {pattern}"
