"""Text as the secret scanner reads it (memories.folding): what a person sees, confusable
letters in Latin, tokens split by one space put together; and the way back to what was
written."""

from __future__ import annotations

import pytest

from memories import folding
from memories.secrets import SecretsPolicy, scan, scrub

AWS = "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize(
    "char",
    ["\u200b", "\u2060", "\u00ad", "\u180e", "\ufe0f", "\U000e0101", "\u034f", "\u115f",
     "\u3164", "\uffa0", "\u17b4", "\u202e", "\U000e0020", "\U0001d173"],
)  # fmt: skip
def test_what_nobody_sees_is_not_read(char):
    assert folding.visible(f"AKIA{char}IOSF{char}ODNN7EXAMPLE") == AWS


def test_ascii_is_read_as_it_is_and_compatibility_forms_fold():
    text = "Plain ASCII: nothing to fold, nothing to remove."
    assert folding.visible(text) is text
    assert folding.visible("\uff21\uff2b\uff29\uff21 \ufb01le") == "AKIA file"  # full width, fi


def test_confusable_letters_read_as_latin_from_unicodes_table():
    assert len(folding._latin_table()) > 1000  # the confusables data, not a list of our own
    read = folding.latin("gh\u0440_ \u0410K\u0406A \u039a \u03bf \u0441\u043e\u0440\u0435")
    assert read.text == "ghp_ AKIA K o cope"
    assert read.origin is None  # one character for one: positions hold


def test_a_confusable_written_as_two_letters_maps_back_to_its_place():
    shown = "x\u2025y"  # the two dot leader reads as two dots
    read = folding.latin(shown)
    assert len(read.text) > len(shown)
    end = read.text.index("y")
    assert read.span(end, end + 1) == (2, 3)


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("the key is here", []),
        ("key AKIAIOSF ODNN7EXAMPLE here", [["key", "AKIAIOSF", "ODNN7EXAMPLE", "here"]]),
        ("one two3 four five six7", [["one", "two3", "four"], ["five", "six7"]]),
        ("AKIAIOSF  ODNN7EXAMPLE", []),  # two spaces: two words
    ],
)
def test_runs_split_by_one_space_are_put_together_where_one_looks_like_a_token(text, groups):
    found = [[text[start:end] for start, end in run.pieces] for run in folding.joined(text)]
    assert found == groups


def test_a_split_token_is_found_where_a_person_reads_it_and_redacted_whole():
    text = f"Use {AWS[:8]}\u00a0{AWS[8:]} for the bucket"
    [finding] = scan(text, "content")
    assert (finding.kind, finding.column) == ("AWS Access Key", 5)
    stored = scrub({"content": text}, SecretsPolicy.REDACT).values["content"]
    assert stored == "Use [REDACTED AWS Access Key] for the bucket"


def test_a_disguised_token_is_redacted_in_the_form_a_person_reads():
    text = "token gh\u0440_Xb7kQ2mP9w\u200bR4tY6uI8oL1zC3vN5aS0dF7gH2 here"
    stored = scrub({"content": text}, SecretsPolicy.REDACT).values["content"]
    assert stored == "token [REDACTED GitHub Token] here"
