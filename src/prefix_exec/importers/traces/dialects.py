"""The attribute dialects of OpenTelemetry spans, one mapping table each, onto the span model (:mod:`.spans`).

A span's dialect is the first of :data:`DIALECTS` whose marker attributes it carries (each span on its own: one
trace may mix an OpenInference model span and a GenAI tool span). Each table names, in order of preference, the
attributes that give a span's kind, its tool's name, call id, arguments and result, its messages, tools and model:

- ``genai``: the OpenTelemetry GenAI conventions, current (``gen_ai.operation.name``, ``gen_ai.tool.*``,
  ``gen_ai.input.messages`` / ``gen_ai.output.messages`` with ``parts``, ``gen_ai.tool.definitions``) and legacy
  (``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*``; pydantic-ai's ``tool_arguments`` / ``tool_response``;
  a ``result`` beside ``response``);
- ``openinference``: Arize's OpenInference (``openinference.span.kind`` LLM / TOOL, ``llm.input_messages.N.*``,
  ``llm.output_messages.N.*``, ``llm.tools.N.tool.json_schema``, ``llm.model_name``, ``tool.name``, ``tool_call.id``,
  ``input.value``, ``output.value``);
- ``mlflow``: MLflow's (``mlflow.spanType`` TOOL / CHAT_MODEL / LLM, ``mlflow.spanInputs``, ``mlflow.spanOutputs``
  as JSON text, ``mlflow.chat.tools``).

A span of no dialect is ``other`` (kept for its place and identity attributes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prefix_exec.importers.traces import messages
from prefix_exec.importers.traces.attributes import json_text, unflatten
from prefix_exec.json_types import JsonObject, JsonValue

#: ``(kind, inputs, outputs, tools, model, tool fields)`` read from one span's attributes and its name.
Attrs = Mapping[str, JsonValue]


@dataclass(frozen=True)
class Mapped:
    """What a dialect reads from a span's attributes (the error evidence is read by the format's reader)."""

    kind: str
    inputs: tuple[JsonObject, ...] | None = None
    outputs: tuple[JsonObject, ...] | None = None
    tools: tuple[JsonObject, ...] | None = None
    model: str | None = None
    tool_name: str | None = None
    call_id: str | None = None
    arguments: JsonValue = None
    result: JsonValue = None


@dataclass(frozen=True)
class Dialect:
    """One attribute dialect: its name, the attributes that mark it, and its table (module docstring)."""

    name: str
    markers: tuple[str, ...]
    kind: Callable[[Attrs], str]
    tool_name: tuple[str, ...]
    call_id: tuple[str, ...]
    arguments: tuple[str, ...]
    result: tuple[str, ...]
    model: tuple[str, ...]
    tools: tuple[str, ...]
    inputs: Callable[[Attrs], tuple[JsonObject, ...] | None]
    outputs: Callable[[Attrs], tuple[JsonObject, ...] | None]

    def map(self, attributes: Attrs, span_name: str) -> Mapped:
        kind = self.kind(attributes)
        if kind == "tool":
            name = _first(attributes, self.tool_name)
            fallback = span_name.removeprefix("execute_tool ").strip() or None
            return Mapped(
                "tool",
                tool_name=name if isinstance(name, str) and name else fallback,
                call_id=_text(_first(attributes, self.call_id)),
                arguments=_first(attributes, self.arguments),
                result=_first(attributes, self.result),
            )
        if kind == "llm":
            tools = next((t for key in self.tools if (t := _tools(attributes, key)) is not None), None)
            model = _first(attributes, self.model)
            return Mapped(
                "llm",
                self.inputs(attributes),
                self.outputs(attributes),
                tools,
                model if isinstance(model, str) else None,
            )
        return Mapped("other")


def _first(attributes: Attrs, keys: tuple[str, ...]) -> JsonValue:
    return next((attributes[k] for k in keys if attributes.get(k) is not None), None)


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) and value else None


def _tools(attributes: Attrs, key: str) -> tuple[JsonObject, ...] | None:
    if key.endswith(".N"):  # flattened: llm.tools.N.tool.json_schema
        items = unflatten(attributes, key[:-2])
        schemas = [i.get("tool", {}).get("json_schema") if isinstance(i, Mapping) else None for i in items]
        return messages.tool_list([json_text(s) for s in schemas if s is not None])
    return messages.tool_list(attributes.get(key))


# --- the GenAI conventions -----------------------------------------------------------------------------------------
_GENAI_LLM_OPERATIONS = ("chat", "text_completion", "generate_content", "invoke_model")


def _genai_kind(attributes: Attrs) -> str:
    operation = attributes.get("gen_ai.operation.name")
    if operation == "execute_tool" or "gen_ai.tool.name" in attributes or "tool_arguments" in attributes:
        return "tool"
    if operation in _GENAI_LLM_OPERATIONS or any(
        k in attributes for k in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt.0.role")
    ):
        return "llm"
    return "other"


def _genai_inputs(attributes: Attrs) -> tuple[JsonObject, ...] | None:
    if attributes.get("gen_ai.input.messages") is not None:
        found = messages.from_parts(attributes["gen_ai.input.messages"])
        system = messages.instructions(attributes.get("gen_ai.system_instructions"))
        return found if found is None or system is None else (system, *found)
    legacy = unflatten(attributes, "gen_ai.prompt")
    return messages.from_legacy(legacy) if legacy else None


def _genai_outputs(attributes: Attrs) -> tuple[JsonObject, ...] | None:
    if attributes.get("gen_ai.output.messages") is not None:
        return messages.from_parts(attributes["gen_ai.output.messages"])
    legacy = unflatten(attributes, "gen_ai.completion")
    return messages.from_legacy(legacy) if legacy else None


GENAI = Dialect(
    name="genai",
    markers=("gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.request.model", "gen_ai.system", "tool_arguments"),
    kind=_genai_kind,
    tool_name=("gen_ai.tool.name",),
    call_id=("gen_ai.tool.call.id", "tool_call_id"),
    arguments=("gen_ai.tool.call.arguments", "tool_arguments", "gen_ai.tool.arguments"),
    result=("gen_ai.tool.call.result", "tool_response", "gen_ai.tool.result", "result", "response"),
    model=("gen_ai.request.model", "gen_ai.response.model"),
    tools=("gen_ai.tool.definitions", "gen_ai.request.tools"),
    inputs=_genai_inputs,
    outputs=_genai_outputs,
)


# --- OpenInference -------------------------------------------------------------------------------------------------
def _openinference_kind(attributes: Attrs) -> str:
    kind = attributes.get("openinference.span.kind")
    return {"LLM": "llm", "TOOL": "tool"}.get(kind, "other") if isinstance(kind, str) else "other"


def _openinference_messages(prefix: str) -> Callable[[Attrs], tuple[JsonObject, ...] | None]:
    def read(attributes: Attrs) -> tuple[JsonObject, ...] | None:
        items = unflatten(attributes, prefix)
        return messages.from_openinference(items) if items else None

    return read


OPENINFERENCE = Dialect(
    name="openinference",
    markers=("openinference.span.kind",),
    kind=_openinference_kind,
    tool_name=("tool.name",),
    call_id=("tool_call.id", "tool.call_id"),
    arguments=("tool_call.function.arguments", "input.value"),
    result=("output.value",),
    model=("llm.model_name",),
    tools=("llm.tools.N",),
    inputs=_openinference_messages("llm.input_messages"),
    outputs=_openinference_messages("llm.output_messages"),
)


# --- MLflow --------------------------------------------------------------------------------------------------------
def _mlflow_kind(attributes: Attrs) -> str:
    kind = attributes.get("mlflow.spanType")  # JSON text: '"TOOL"'
    kind = kind.strip('"') if isinstance(kind, str) else None
    return {"TOOL": "tool", "CHAT_MODEL": "llm", "LLM": "llm"}.get(kind or "", "other")


def _mlflow_inputs(attributes: Attrs) -> tuple[JsonObject, ...] | None:
    return messages.chat_list(attributes.get("mlflow.spanInputs"))


def _mlflow_outputs(attributes: Attrs) -> tuple[JsonObject, ...] | None:
    value: Any = json_text(attributes.get("mlflow.spanOutputs"))
    if isinstance(value, Mapping) and isinstance(value.get("choices"), list):
        value = [c.get("message") for c in value["choices"] if isinstance(c, Mapping)]
    elif isinstance(value, Mapping) and "role" in value:
        value = [value]
    return messages.chat_list(value)


MLFLOW = Dialect(
    name="mlflow",
    markers=("mlflow.spanType",),
    kind=_mlflow_kind,
    tool_name=("mlflow.spanFunctionName",),
    call_id=(),
    arguments=("mlflow.spanInputs",),
    result=("mlflow.spanOutputs",),
    model=("mlflow.chat_model", "gen_ai.request.model"),
    tools=("mlflow.chat.tools",),
    inputs=_mlflow_inputs,
    outputs=_mlflow_outputs,
)

#: The dialects, in the order a span is matched against their markers.
DIALECTS: tuple[Dialect, ...] = (OPENINFERENCE, MLFLOW, GENAI)


def dialect_of(attributes: Attrs) -> Dialect | None:
    """The first dialect whose marker attributes the span carries, else ``None``."""
    return next((d for d in DIALECTS if any(m in attributes for m in d.markers)), None)
