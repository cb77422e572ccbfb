"""The SQL form of pg_trgm's two functions (for a server without the extension) gives the
extension's trigrams and similarity, compared on the real extension."""

from __future__ import annotations

import itertools

import pytest
from django.db import connection

from memories.trigrams import functions_sql

pytestmark = pytest.mark.django_db

NOTE = "Always lock the invoice row before updating its total, or two workers lose updates."
TEXTS = [
    NOTE,
    NOTE.replace("Always", "Please always"),
    NOTE + " zebra",
    NOTE.upper(),
    "Use UTC for every stored time.",
    'src/billing/models.py: a_b-c 42 x9  --  (parens) [brackets] "quotes"',
    "Zürich's café serves crème brûlée; ÉCOLE Straße",
    "a",
    "ab 1 22 333",
    "   ",
    "...!!!",
    "",
]


@pytest.fixture
def sql_trigrams():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm'")
        if cursor.fetchone() is None:
            pytest.skip("pg_trgm is not installed here: nothing to compare the SQL form with")
        cursor.execute("CREATE SCHEMA trgm_sql")
        for statement in functions_sql("trgm_sql"):
            cursor.execute(statement)
        yield cursor


def test_the_sql_trigrams_are_pg_trgms(sql_trigrams):
    for text in TEXTS:
        sql_trigrams.execute("SELECT public.show_trgm(%s), trgm_sql.show_trgm(%s)", [text, text])
        extension, sql = sql_trigrams.fetchone()
        # pg_trgm shows a trigram of more than three bytes by a hash of it ("0x…").
        assert len(sql) == len(extension), text
        assert sorted(t for t in sql if len(t.encode()) == 3) == sorted(
            t for t in extension if not t.startswith("0x")
        ), text


def test_the_sql_similarity_is_pg_trgms_to_the_bit(sql_trigrams):
    for a, b in itertools.product(TEXTS, repeat=2):
        sql_trigrams.execute(
            "SELECT public.similarity(%s, %s)::float8, trgm_sql.similarity(%s, %s)::float8",
            [a, b, a, b],
        )
        extension, sql = sql_trigrams.fetchone()
        assert sql == extension, (a, b)
