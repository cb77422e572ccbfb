from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from memories.text import clean_content, clean_tags, content_hash, summarize


def test_control_characters_and_lone_surrogates_are_removed_newlines_kept():
    assert clean_content("a\x00bc\ud800\r\nd\te\x1f\u200d") == "abc\nd\te\u200d"


def test_content_must_be_a_string():
    with pytest.raises(ValidationError):
        clean_content(42)


def test_tags_strip_dedupe_and_bound(settings):
    assert clean_tags([" a ", "a", "b"]) == ["a", "b"]
    settings.MEMORY_MAX_TAGS = 2
    with pytest.raises(ValidationError, match="limit is 2"):
        clean_tags(["a", "b", "c"])
    with pytest.raises(ValidationError, match="limit is 200"):
        clean_tags(["x" * 201])
    with pytest.raises(ValidationError):
        clean_tags([1])


def test_content_hash_ignores_case_and_white_space():
    assert content_hash("Use  Batches\n") == content_hash("use batches")
    assert content_hash("use batches") != content_hash("use batch")


def test_summary_is_the_first_sentence_cut_to_the_limit(settings):
    assert summarize("First one. Second one.") == "First one."
    settings.MEMORY_SUMMARY_MAX_CHARS = 10
    assert summarize("A very long first sentence") == "A very lo…"
