"""tiktoken works offline from the packaged vocabularies, with the official hashes."""

from __future__ import annotations

import hashlib

import pytest

from memories import tokens


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        # Reference counts of tiktoken's own test-suite strings.
        ("o200k_base", "hello world", [24912, 2375]),
        ("cl100k_base", "hello world", [15339, 1917]),
        ("cl100k_base", "hello <|endoftext|>", [15339, 83739, 8862, 728, 428, 91, 29]),
    ],
)
def test_encodings_load_offline_and_encode_like_tiktoken(name, text, expected):
    assert tokens.get_encoding(name).encode(text, disallowed_special=()) == expected
    assert tokens.count_tokens(text, name) == len(expected)


def test_seeded_cache_holds_the_official_vocabularies(settings, tmp_path):
    for name, (address, sha256) in tokens.VOCABULARIES.items():
        tokens.seed_cache(name, tmp_path)
        cached = tmp_path / hashlib.sha1(address.encode()).hexdigest()
        assert hashlib.sha256(cached.read_bytes()).hexdigest() == sha256


def test_a_corrupt_cache_file_is_replaced(tmp_path):
    address, sha256 = tokens.VOCABULARIES["cl100k_base"]
    cached = tmp_path / hashlib.sha1(address.encode()).hexdigest()
    cached.write_bytes(b"garbage")
    tokens.seed_cache("cl100k_base", tmp_path)
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == sha256


def test_unknown_encoding_names_the_choices():
    with pytest.raises(tokens.UnknownEncoding, match="o200k_base, cl100k_base"):
        tokens.count_tokens("x", "p50k_base")
