"""The MCP tools' arguments, checked as the REST API checks a body (memory_layer_client.tools).

An argument a tool does not know is an error naming the accepted ones and the nearest; a bad
value says what to fix in the API's words, never a validation library's."""

import difflib
import inspect
import re
from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import ValidationError

# The key under which StrictArguments hands a tool what is wrong with its arguments.
INVALID = "__invalid__"
# The REST API's names of a tool's arguments (in snake case), where they differ.
REST_NAMES = {
    "token_budget": "budget",
    "tokens": "budget",
    "q": "query",
    "id": "memory_id",
    "memory": "memory_id",
    "memory_ids": "used_memory_ids",
    "conflict": "conflict_id",
    "pair_id": "conflict_id",
    "files": "paths",
    "commit": "ref",
}


class StrictArguments(FuncMetadata):
    """A tool's arguments checked as the REST API checks a body: an argument the tool does
    not know is an error that names the accepted ones and the nearest match (an agent that
    guessed ``writeScope`` learns to say ``write_scope``, instead of being silently
    unscoped), and a value error says what to fix in the API's words."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        accepted = [field.alias or name for name, field in self.arg_model.model_fields.items()]
        unknown = sorted(set(arguments_to_validate) - set(accepted))
        if unknown:
            told = "; ".join(_unknown(name, accepted) for name in unknown)
            return {INVALID: f"{told}. Accepted arguments: {', '.join(accepted)}."}
        try:
            return super().validate_arguments(arguments_to_validate)
        except ValidationError as error:
            return {INVALID: "; ".join(_explained(problem) for problem in error.errors()) + "."}


def without_client(fn: Any) -> inspect.Signature:
    """A tool function's signature as its caller sees it: without the client it is given."""
    signature = inspect.signature(fn)
    return signature.replace(
        parameters=[p for name, p in signature.parameters.items() if name != "client"]
    )


def strict(tool: Tool, output: Any) -> Tool:
    """``tool`` with strict arguments (its input schema forbids unknown properties) and its
    structured content declared by ``output`` (a TypedDict) as its output schema.

    The schema is published, not checked on every answer: checking a recall's items and
    metadata costs 0.8 ms, a quarter of what MCP adds to a context request, and the clients
    check it anyway (the SDKs validate structured content against the output schema; the
    tests drive the Python and TypeScript ones through every tool)."""
    schema = FuncMetadata(arg_model=tool.fn_metadata.arg_model, output_model=output).output_schema
    metadata = StrictArguments(arg_model=tool.fn_metadata.arg_model, output_schema=schema)
    parameters = {**tool.parameters, "additionalProperties": False}
    return tool.model_copy(update={"fn_metadata": metadata, "parameters": parameters})


def _unknown(name: str, accepted: list[str]) -> str:
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower().replace("-", "_")
    guess = snake if snake in accepted else REST_NAMES.get(snake)
    if guess not in accepted:
        close = difflib.get_close_matches(snake, accepted, n=1, cutoff=0.6)
        guess = close[0] if close else None
    told = f"unknown argument `{name}`"
    return f"{told}; did you mean `{guess}`?" if guess else told


# A value error by its kind, in the words the REST API uses.
_SAYS = {
    "missing": "is required",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "string_too_short": "must have at least {min_length} characters",
    "string_too_long": "must have at most {max_length} characters",
    "too_short": "must have at least {min_length} items",
    "too_long": "must have at most {max_length} items",
    "literal_error": "must be one of {expected}",
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list",
}


def _explained(problem: Any) -> str:
    place = problem["loc"]
    where = str(place[0]) + "".join(f"[{part}]" for part in place[1:]) if place else "arguments"
    says = _SAYS.get(problem["type"])
    if says is None:
        says = str(problem["msg"]).replace("Input should be", "must be")
        says = says[0].lower() + says[1:] if says else "is not valid"
    else:
        says = says.format(**problem.get("ctx", {}))
    if problem["type"] == "missing":
        return f"`{where}` {says}"
    return f"`{where}` {says} (got {problem.get('input')!r})"
