"""The evidence inference collects over a corpus, one conversation at a time, in bounded memory.

Per conversation (:class:`_Walk`), in step order:

- a user or system message's tokens are values the conversation gave (:func:`prefix_exec.envs.custom.mentions.
  tokens` and ``forms``, the same rule and bounds the ``refs`` check reads; a long text many conversations share, a
  system prompt, is tokenized once: :class:`Heard`);
- for each id-like scalar of a call's arguments (:func:`~prefix_exec.inference.values.idlike`) at a path
  (a *consumer*: tool and argument path), the value is **flow** when an earlier call's result held it (and each
  result path that held it is an *edge* from that producer), else **given** when an earlier message gave it, else
  **prose** when it stood in an earlier result that is not JSON (text a ``produces`` path cannot read), else
  **none**. A value none explains whose call the log records as refused with a "not found" kind of error (the
  classifier's ``dependency`` rules: "not found", "does not exist", "unknown id") is **refused** too: evidence that
  the argument must hold an existing id;
- then, unless the call was refused, each scalar of its result is indexed by value under its path (a *producer*);
- a value used by an accepted call and later refused at another call (its error of a "not found" or
  "no longer" kind) counts toward the first call invalidating it (``invalidates``).

Recorded errors count only with ``errors`` on (``--no-error-evidence`` turns them off); which replies are errors is
the :class:`~prefix_exec.envs.custom.evidence.EvidencePolicy`'s to say, as for scoring.

Bounds: at most :data:`MAX_CONSUMERS` consumers and :data:`MAX_PRODUCERS` producers are tracked (more are counted
as dropped), :data:`MAX_EDGES` edges per consumer, ``max_values`` distinct values per consumer (beyond, only the
count grows), :data:`MAX_INDEXED` values indexed per conversation, :data:`MAX_PRODUCERS_PER_VALUE` producers per
value; values and paths come from bounded walks (:mod:`prefix_exec.inference.values`). So memory is bounded by the
constants whatever the corpus, and time is linear in its size.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from prefix_exec.envs.custom import mentions
from prefix_exec.envs.custom.evidence import EvidencePolicy, Refusal, recorded_value, refusal
from prefix_exec.envs.custom.mentions import message_text, tokens
from prefix_exec.inference.corpus import Conversation, Said, shown
from prefix_exec.inference.values import argument_leaves, idlike, key, result_leaves
from prefix_exec.trajectory import FailureLabel, ToolCall

#: Most consumers (tool, argument path) tracked over a corpus.
MAX_CONSUMERS = 5_000
#: Most producers (tool, result path) tracked over a corpus.
MAX_PRODUCERS = 20_000
#: Most producer edges kept per consumer.
MAX_EDGES = 64
#: Default most distinct values remembered per consumer (``--max-values``).
DEFAULT_MAX_VALUES = 1_000
#: Most values indexed per conversation (results beyond it feed nothing more).
MAX_INDEXED = 200_000
#: Most producers remembered per value in one conversation.
MAX_PRODUCERS_PER_VALUE = 8
#: Examples kept per consumer and per edge.
EXAMPLES = 3
#: Error kinds that say a value is unknown or gone: the classifier's "not found" family, and "no longer".
UNKNOWN_RULES = frozenset({"not found", "nothing found", "unknown id", "does not exist", "not-found error type"})

#: ``(tool, path)``: a consumer (an argument path) or a producer (a result path).
Site = tuple[str, str]


@dataclass
class Consumer:
    """What was seen of one argument path: ``calls`` scalars passed there, ``idlike`` of them id-like, ``cases`` the
    distinct id-like values per conversation (a conversation passing one value twice is one case), ``worded`` the cases
    of several words (text, such as ``likes tea``); of the cases,
    ``flow`` an earlier result held, ``given`` only a message gave, ``prose`` only a prose result held, ``none``
    nothing explained, and ``refused`` of the ``none`` a "not found" refusal confirmed; ``edges`` counts each
    producer that held a flowing value; ``values`` the distinct values seen (at most the cap), ``distinct_cut``
    whether more were seen; ``examples`` the first few of each source (``flow``, ``given``, ``prose``, ``none``),
    ``(where, value, how)``."""

    calls: int = 0
    idlike: int = 0
    cases: int = 0
    worded: int = 0
    flow: int = 0
    given: int = 0
    prose: int = 0
    none: int = 0
    refused: int = 0
    edges: Counter[Site] = field(default_factory=Counter)
    values: set[Hashable] = field(default_factory=set)
    distinct_cut: bool = False
    examples: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)


@dataclass
class Producer:
    """What was seen of one result path: ``values`` scalars produced there, of them ``idlike`` id-like, in
    ``conversations`` conversations."""

    values: int = 0
    idlike: int = 0
    conversations: int = 0


@dataclass
class Invalidation:
    """A value used by an accepted call at ``Site`` then used again: ``later`` times, ``refused`` of them refused
    with an unknown-or-gone error."""

    later: int = 0
    refused: int = 0


@dataclass
class Evidence:
    """Everything counted over a corpus (module docstring): add conversations with :meth:`add`."""

    policy: EvidencePolicy
    errors: bool = True
    max_values: int = DEFAULT_MAX_VALUES
    conversations: int = 0
    calls: int = 0
    consumers: dict[Site, Consumer] = field(default_factory=dict)
    producers: dict[Site, Producer] = field(default_factory=dict)
    invalidations: dict[Site, Invalidation] = field(default_factory=dict)
    #: Tools seen called, with their call counts, and their argument names (for the schema check without --tools).
    tools: Counter[str] = field(default_factory=Counter)
    #: The argument schema of each tool name in the first tools list a conversation offered it in (schema priors).
    offered: dict[str, Any] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)
    #: The tokens of long texts seen (:class:`Heard`).
    said: dict[str, list[str]] = field(default_factory=dict, repr=False)

    def add(self, conversation: Conversation) -> None:
        """Count one conversation's evidence."""
        self.conversations += 1
        _offer(self.offered, conversation.tools)
        _Walk(self, conversation.where).run(conversation)

    def consumer(self, site: Site) -> Consumer | None:
        found = self.consumers.get(site)
        if found is None and len(self.consumers) < MAX_CONSUMERS:
            found = self.consumers[site] = Consumer()
        elif found is None:
            self.dropped["consumers"] += 1
        return found

    def producer(self, site: Site) -> Producer | None:
        found = self.producers.get(site)
        if found is None and len(self.producers) < MAX_PRODUCERS:
            found = self.producers[site] = Producer()
        elif found is None:
            self.dropped["producers"] += 1
        return found


def _offer(offered: dict[str, Any], tools: Any) -> None:
    """Remember the argument schema of the first tool of each name a conversation's own tools list declares
    (OpenAI ``parameters``, MCP ``inputSchema``, Anthropic ``input_schema``)."""
    if not isinstance(tools, list):
        return
    for tool in tools[:1_000]:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("function")
        function: dict[str, Any] = inner if isinstance(inner, dict) else tool
        name = function.get("name")
        schema = function.get("parameters", function.get("inputSchema", function.get("input_schema")))
        if isinstance(name, str) and name not in offered and len(offered) < MAX_CONSUMERS:
            offered[name] = schema


#: Texts at least this long are tokenized once per corpus (kept in :attr:`Evidence.said`, at most
#: :data:`SAID_TEXTS` of them, none longer than :data:`SAID_CHARS`): a system prompt every conversation repeats.
SAID_MIN_CHARS = 1_000
SAID_TEXTS = 64
SAID_CHARS = 200_000


class Heard:
    """The values one conversation's user and system messages gave so far, by the rule of
    :mod:`prefix_exec.envs.custom.mentions` (its :func:`~prefix_exec.envs.custom.mentions.tokens` of each message's
    text, at most :data:`~prefix_exec.envs.custom.mentions.MAX_CONVERSATION_TOKENS` per conversation, a value given by
    any of its ``forms``); ``shared`` holds the tokens of long texts already seen in the corpus."""

    def __init__(self, shared: dict[str, list[str]]) -> None:
        self.shared = shared
        self.first: dict[str, int] = {}

    def hear(self, index: int, content: Any) -> None:
        text = message_text(content)
        said = self.shared.get(text) if len(text) >= SAID_MIN_CHARS else None
        if said is None:
            said = tokens(text)
            if SAID_MIN_CHARS <= len(text) <= SAID_CHARS and len(self.shared) < SAID_TEXTS:
                self.shared[text] = said
        for token in said:
            if len(self.first) >= mentions.MAX_CONVERSATION_TOKENS:
                break
            self.first.setdefault(token, index)

    def given_at(self, value: Any) -> int | None:
        found = [self.first[f] for f in mentions.forms(value) if f in self.first]
        return min(found) if found else None


class _Walk:
    """One conversation's walk (module docstring): the values indexed so far and what gave them."""

    def __init__(self, evidence: Evidence, where: str) -> None:
        self.evidence, self.where = evidence, where
        self.mentions = Heard(evidence.said)
        self.index: dict[Hashable, list[Site]] = {}
        self.prose: set[Hashable] = set()
        self.used: dict[Hashable, Site] = {}
        self.counted: set[tuple[str, str, Hashable]] = set()
        self.judged: dict[Hashable, bool] = {}
        self.produced_here: set[Site] = set()
        self.indexed = 0

    def run(self, conversation: Conversation) -> None:
        for step in conversation.steps:
            if isinstance(step, Said):
                self.mentions.hear(step.index, step.content)
            else:
                self.call(step)
        for site in self.produced_here:
            producer = self.evidence.producers.get(site)
            if producer is not None:
                producer.conversations += 1

    def call(self, call: ToolCall) -> None:
        self.evidence.calls += 1
        self.evidence.tools[call.name] += 1
        refused = refusal(call.observation, self.evidence.policy) if self.evidence.errors else None
        unknown = refused if refused is not None and _unknown(refused) else None
        if call.parse_error is None:
            unexplained = self.arguments(call, unknown)
            if unknown is not None:
                self.confirm(call.name, unexplained, unknown)
        if refused is None:
            self.results(call)

    def arguments(self, call: ToolCall, refused: Refusal | None) -> list[tuple[str, Hashable, Any]]:
        """Count each argument scalar of ``call``; return the id-like ones nothing explained, ``(path, key,
        value)``."""
        unexplained: list[tuple[str, Hashable, Any]] = []
        for path, value in argument_leaves(call.arguments):
            consumer = self.evidence.consumer((call.name, path))
            if consumer is None:
                continue
            consumer.calls += 1
            if not self.looks(value):
                continue
            consumer.idlike += 1
            value_key = key(value)
            if self.evidence.errors:  # invalidation evidence needs recorded errors
                self.later_use(value_key, refused)
                if refused is None and (value_key in self.used or len(self.used) < MAX_INDEXED):
                    self.used[value_key] = (call.name, path)
            if (call.name, path, value_key) in self.counted:
                continue  # one conversation passing one value again is one piece of evidence
            if len(self.counted) < MAX_INDEXED:
                self.counted.add((call.name, path, value_key))
            consumer.cases += 1
            consumer.worded += isinstance(value, str) and len(value.split()) > 1
            self.remember(consumer, value_key)
            source, how = self.source_of(consumer, value_key, value)
            if source == "none":
                unexplained.append((path, value_key, value))
            kept = consumer.examples.setdefault(source, [])
            if len(kept) < EXAMPLES:
                kept.append((self.where, shown(value), how))
        return unexplained

    def looks(self, value: Any) -> bool:
        """:func:`~prefix_exec.inference.values.idlike`, remembered for the conversation's values (at most
        :data:`MAX_INDEXED`; a value seen at many paths is judged once)."""
        if type(value) is not str and type(value) is not int:
            return False
        found = self.judged.get(value)
        if found is None:
            found = idlike(value)
            if len(self.judged) < MAX_INDEXED:
                self.judged[value] = found
        return found

    def remember(self, consumer: Consumer, value_key: Hashable) -> None:
        if len(consumer.values) < self.evidence.max_values:
            consumer.values.add(value_key)
        elif value_key not in consumer.values:
            consumer.distinct_cut = True

    def source_of(self, consumer: Consumer, value_key: Hashable, value: Any) -> tuple[str, str]:
        """Count where ``value`` came from: ``(source, words)``, the source one of ``flow``, ``given``, ``prose``,
        ``none``, and the words for an example (``flow from TOOL PATH``, ``given at message N``)."""
        producers = self.index.get(value_key)
        if producers:
            consumer.flow += 1
            for site in producers:
                if site in consumer.edges or len(consumer.edges) < MAX_EDGES:
                    consumer.edges[site] += 1
            return "flow", f"from {producers[0][0]} {producers[0][1]}"
        given = self.mentions.given_at(value)
        if given is not None:
            consumer.given += 1
            return "given", f"given at message {given}"
        if value_key in self.prose:
            consumer.prose += 1
            return "prose", "in an earlier result that is not JSON"
        consumer.none += 1
        return "none", "no earlier result or message held it"

    def later_use(self, value_key: Hashable, refused: Refusal | None) -> None:
        """A value an accepted call used before, used again: count it for that call's invalidating it."""
        earlier = self.used.get(value_key)
        if earlier is None:
            return
        seen = self.evidence.invalidations.setdefault(earlier, Invalidation())
        seen.later += 1
        if refused is not None:
            seen.refused += 1

    def confirm(self, tool: str, unexplained: list[tuple[str, Hashable, Any]], refused: Refusal) -> None:
        """A "not found" refusal after unexplained values: the values its text names (else the only one) count
        as refused."""
        named = [u for u in unexplained if isinstance(u[2], str | int) and str(u[2]) in refused.text]
        for path, _, _ in named or (unexplained if len(unexplained) == 1 else []):
            consumer = self.evidence.consumers.get((tool, path))
            if consumer is not None:
                consumer.refused += 1

    def results(self, call: ToolCall) -> None:
        """Index the scalars of ``call``'s recorded result by value (a text that is not JSON: its tokens, as
        prose)."""
        result = recorded_value(call.observation)
        if isinstance(result, str) and not idlike(result):
            for token in tokens(message_text(result), 2_000):
                if len(self.prose) < MAX_INDEXED:
                    self.prose.add(key(token))
            return
        by_path: dict[str, list[Any]] = {}
        for path, value in result_leaves(result):
            by_path.setdefault(path, []).append(value)
        index = self.index
        for path, values in by_path.items():
            site = (call.name, path)
            producer = self.evidence.producer(site)
            if producer is None:
                continue
            self.produced_here.add(site)
            ids = [v for v in values if self.looks(v)]  # a string or an integer: its own key (values.key)
            producer.values += len(values)
            producer.idlike += len(ids)
            for value in ids:
                sites = index.get(value)
                if sites is None and self.indexed < MAX_INDEXED:
                    sites = index[value] = []
                    self.indexed += 1
                if sites is not None and site not in sites and len(sites) < MAX_PRODUCERS_PER_VALUE:
                    sites.append(site)


def _unknown(refused: Refusal) -> bool:
    """Whether a refusal says a value is unknown or gone (the classifier's ``dependency`` rules, or "no longer")."""
    return refused.label is FailureLabel.DEPENDENCY or refused.rule in UNKNOWN_RULES or refused.rule == "no longer"
