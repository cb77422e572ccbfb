"""API key tokens: ``ml_<prefix>_<secret>``; the prefix finds the key, the secret proves it."""

from __future__ import annotations

import hashlib
import hmac

API_KEY_TOKEN_PREFIX = "ml"


def hash_secret(secret: str) -> str:
    # The secret is 256 random bits: a fast hash is enough, no password stretching needed.
    return hashlib.sha256(secret.encode()).hexdigest()


def split_token(token: str) -> tuple[str, str] | None:
    """(prefix, secret) of a well-formed token, else None."""
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != API_KEY_TOKEN_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def secret_matches(secret: str, secret_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), secret_hash)
