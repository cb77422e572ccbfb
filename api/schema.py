"""Post-processing of the OpenAPI schema so it states exactly what the API enforces."""

from __future__ import annotations

from typing import Any


def forbid_unknown_request_fields(result: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Request bodies refuse unknown fields (api.fields.StrictInput); say so."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
    return result
