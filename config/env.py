"""Read settings from the environment, with safe defaults for local use."""

from __future__ import annotations

import os
from pathlib import Path

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_path(name: str, default: Path) -> Path:
    raw = os.environ.get(name)
    return Path(raw) if raw else default


def read_env_file(path: Path) -> dict[str, str]:
    """The KEY=VALUE lines of ``path``. ``#`` starts a comment at the beginning of a line or
    after white space; ``export`` before a name and quotes around a value are dropped."""
    values = {}
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        name = name.strip().removeprefix("export ").strip()
        values[name] = value.strip().strip("'\"")
    return values


def load_env_file(path: Path) -> None:
    """Load the KEY=VALUE lines of ``path`` (if it exists, see ``read_env_file``) into the
    environment. Variables already set in the environment win."""
    if not path.is_file():
        return
    for name, value in read_env_file(path).items():
        os.environ.setdefault(name, value)
