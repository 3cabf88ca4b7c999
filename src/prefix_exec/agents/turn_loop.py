"""The turn loop every variant shares: it asks the executor's model for tool calls and runs them on the session.

The executor is the agent role that acts, beside the planner and the verifier: only its model sees the tools,
and only its calls become actions (its cost role is ``executor``). Per user turn the loop goes: one model call
(a step), then every tool call of the answer in order, each result handed back to the model. The turn ends when
the model answers without a tool call, or when the turn's limit (:mod:`~prefix_exec.agents.turn_limit`) stops it
before a model call: by default ``max_steps`` model calls (the horizon cap); a driver may pass a benchmark's own
limit instead. A call whose arguments could not be parsed is an action (a schema failure at replay) and never
reaches the environment. Recorded actions are named ``t<turn>.s<step>.c<index>`` (0-based), as the importers
name them; the model's own call id stays in the transcript. With a guard, each candidate call is first checked
on a fork of the live session; a rejected call does not execute and is not an action, and the model gets the
verdict back instead.

At most ``max_calls_per_step`` calls of one answer run (the first ones, in order). Each call beyond that
limit is not executed and is not an action: the model gets a tool reply saying so, and
``metadata["dropped_calls"]`` counts them. A runaway answer (thousands of parallel calls) thus makes at
most that many actions; every call still gets its reply, as the chat protocol wants one per call id.

Calls read from an answer's text are noted: ``metadata["text_formats"]`` maps each such step,
``t<turn>.s<step>`` (the prefix of its actions' names), to the format that read it, and an answer to a native
request whose calls were read from its text (``tool_mode = "auto"``) sets ``metadata["text_fallback"]`` to
:data:`CONTENT_FALLBACK`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from prefix_exec.agents.episode import Episode, render
from prefix_exec.agents.turn_limit import StepCap, TurnLimit
from prefix_exec.envs.base import MessageAware, Session
from prefix_exec.llm.backend import ChatBackend
from prefix_exec.llm.types import Message
from prefix_exec.replay import check, check_action
from prefix_exec.trajectory import Observation, ToolCall

#: ``metadata["text_fallback"]`` of a rollout in which the server left native calls in the answer's text.
CONTENT_FALLBACK = "the server sent tool calls as text (no tool_calls); read from the answer's text"


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended: the final answer text (``None`` when stopped), model calls used, the cap flag (a step
    limit stopped the turn) and ``stop``, the limit's reason when it stopped the turn (``None``: answered)."""

    answer: str | None
    steps: int
    capped: bool
    stop: str | None = None


class TurnLoop:
    """Runs turns for one model, the executor's ``backend``. ``guarded`` turns on the runtime guard (the
    ``guarded-react`` variant)."""

    def __init__(
        self, backend: ChatBackend, *, max_steps: int = 20, guarded: bool = False, max_calls_per_step: int = 64
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be >= 1")
        if max_calls_per_step < 1:
            raise ValueError("max_calls_per_step must be >= 1")
        self.backend = backend
        self.max_steps = max_steps
        self.guarded = guarded
        self.max_calls_per_step = max_calls_per_step

    def run_turn(self, episode: Episode, session: Session, turn: int, limit: TurnLimit | None = None) -> TurnResult:
        """Run user turn ``turn`` (0-based) until the model answers in text or ``limit`` (default: a
        :class:`~prefix_exec.agents.turn_limit.StepCap` of ``max_steps``) stops it before a model call."""
        limit = limit if limit is not None else StepCap(self.max_steps)
        step = 0
        while (stop := limit.before_call(episode, step)) is None:
            step += 1
            done = self.backend.complete(episode.messages, episode.tools, role="executor")
            limit.after_call(episode, done)
            episode.charge(done)
            if done.text_format is not None:
                episode.metadata.setdefault("text_formats", {})[f"t{turn}.s{step - 1}"] = done.text_format
            if done.in_content:
                episode.metadata["text_fallback"] = CONTENT_FALLBACK
            episode.say(done.message)
            if not done.calls:
                return TurnResult(answer=done.content, steps=step, capped=False)
            run, dropped = done.calls[: self.max_calls_per_step], done.calls[self.max_calls_per_step :]
            if isinstance(session, MessageAware):
                session.begin_message()
            replies = [
                self._act(episode, session, call, replace(call, turn=turn, call_id=f"t{turn}.s{step - 1}.c{index}"))
                for index, call in enumerate(run)
            ]
            if dropped:
                episode.count("dropped_calls", len(dropped))
                text = (
                    f"Not executed: this answer asked for {len(done.calls)} tool calls and at most "
                    f"{self.max_calls_per_step} run per step. Call it again in a later step if it is still needed."
                )
                replies += [self.backend.tool_result_message(call, text) for call in dropped]
            if all(r["role"] == "user" for r in replies):
                # Text-mode results are user messages: one per step keeps the roles alternating.
                replies = [{"role": "user", "content": "\n\n".join(str(r["content"]) for r in replies)}]
            for reply in replies:  # a tool result as user text is no value the user gave
                episode.say(reply, given_text="" if reply["role"] == "user" else None)
        if stop.capped:
            episode.count("capped_turns")
        return TurnResult(answer=None, steps=step, capped=stop.capped, stop=stop.reason)

    def _act(self, episode: Episode, session: Session, asked: ToolCall, call: ToolCall) -> Message:
        """Run ``call`` (the action as recorded) and return the reply message for the model; ``asked`` carries
        the model's own id for that message."""
        if self.guarded:
            verdict = check(session, call)
            if not verdict.accepted:
                label = verdict.label.value if verdict.label else "rejected"
                episode.note("guard", {"tool": call.name, "accepted": False, "label": label, "reason": verdict.reason})
                episode.count("guard_rejections")
                text = f"Not executed: a pre-execution check rejected this call ({label}): {verdict.reason}"
                return self.backend.tool_result_message(asked, text)
        verdict = check_action(session, call)
        # The agent sees the benchmark's own answer (a rejected verdict's ``result``, when the environment knows
        # it); our diagnosis (``reason``) is for the record, and reaches the agent only when nothing else exists.
        content = verdict.result if verdict.accepted or verdict.result is not None else {"error": verdict.reason}
        episode.actions.append(replace(call, observation=Observation(content=content, error=not verdict.accepted)))
        return self.backend.tool_result_message(asked, render(content))
