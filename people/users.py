"""Users as the calling system names them, and the checks every write about them passes:
a readable error before the database says no, and no secret stored."""

from __future__ import annotations

import json
import re
from typing import Any

from django.core.exceptions import ValidationError

from memories.secrets import scrub
from memories.text import strip_control_characters
from people.models import USER_REF_MAX

# A user's and an agent's id: as the calling system names them, from a safe alphabet (they
# appear in URLs, logs and review pages).
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+\-]*$"
ID_RULE = "letters, digits and . _ : @ + -, starting with a letter or digit"
_ID = re.compile(ID_PATTERN)


def identifier(value: object, name: str, limit: int) -> str:
    """An id as the calling system names it, or a ValidationError saying what to fix."""
    if not isinstance(value, str) or not value:
        raise ValidationError({name: f"Give the {name} as a non-empty string."})
    if len(value) > limit:
        raise ValidationError({name: f"At most {limit} characters (got {len(value)})."})
    if not _ID.match(value):
        raise ValidationError({name: f"Use {ID_RULE} (got {value!r})."})
    return value


def clean_user_ref(value: object, field_name: str = "userId") -> str:
    """A user's id as the API takes it (``userId``), checked."""
    return identifier(value, field_name, USER_REF_MAX)


def scrub_json(value: Any, field_name: str, mode: str) -> Any:
    """``value`` (any JSON) with every string in it, keys included, scanned for secrets as a
    memory's words are: refused under the reject ``mode``, redacted under redact."""
    strings: dict[str, str] = {}

    def collect(item: Any, path: str) -> None:
        if isinstance(item, str):
            strings[path] = item
        elif isinstance(item, list):
            for index, inner in enumerate(item):
                collect(inner, f"{path}[{index}]")
        elif isinstance(item, dict):
            for key, inner in item.items():
                strings[f"{path}.{key} (key)"] = key
                collect(inner, f"{path}.{key}")

    collect(value, field_name)
    if not strings:
        return value
    cleaned = scrub(dict(strings), mode).values
    if cleaned == strings:
        return value

    def rebuild(item: Any, path: str) -> Any:
        if isinstance(item, str):
            return cleaned[path]
        if isinstance(item, list):
            return [rebuild(inner, f"{path}[{index}]") for index, inner in enumerate(item)]
        if isinstance(item, dict):
            return {
                cleaned[f"{path}.{key} (key)"]: rebuild(inner, f"{path}.{key}")
                for key, inner in item.items()
            }
        return item

    return rebuild(value, field_name)


def clean_json(value: Any) -> Any:
    """``value`` with control characters and lone surrogates stripped from every string and
    key in it (the product's rule for text: PostgreSQL cannot store a NUL, in jsonb either)."""
    if isinstance(value, str):
        return strip_control_characters(value)
    if isinstance(value, list):
        return [clean_json(item) for item in value]
    if isinstance(value, dict):
        return {strip_control_characters(key): clean_json(item) for key, item in value.items()}
    return value


def json_size(value: Any) -> int:
    """The characters of ``value`` as compact JSON."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
