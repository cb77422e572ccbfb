"""A memory's words read code: the parts of the code names in its text and the words of its
tags' folders and files join its search vector and match keys (memories.words)."""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.core.validators
import django.db.models.functions.comparison
from django.db import migrations, models

# The parts of each code name in a text, as words: ``_multipart.py`` gives "multipart py",
# ``MultiDict`` "Multi Dict", ``HTTPServer`` "HTTP Server", ``src/app/views.py`` "src app
# views py" (PostgreSQL's parser keeps such tokens whole, and splits snake_case itself).
CODE_WORDS = r"""
CREATE FUNCTION memory_code_words(body text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(string_agg(regexp_replace(regexp_replace(regexp_replace(
        token[1], '([[:lower:][:digit:]])([[:upper:]])', '\1 \2', 'g'),
        '([[:upper:]]+)([[:upper:]][[:lower:]])', '\1 \2', 'g'),
        '[^[:alnum:]]+', ' ', 'g'), ' '), '')
    FROM regexp_matches(body,
        '([[:alnum:]_./-]*(?:[[:lower:]][[:upper:]]|[[:upper:]][[:upper:]][[:lower:]]'
        '|[[:alnum:]][./][[:alpha:]])[[:alnum:]_./-]*)', 'g') AS token
$$
"""
# The words of paths and globs: their folders and file names split at / _ . - and case
# changes, without the file's extension, the wildcards, and the folder names that say
# nothing of what a file is about (src, lib, test, tests).
PATH_WORDS = r"""
CREATE FUNCTION memory_path_words(paths text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(string_agg(word, ' '), '')
    FROM unnest(paths) AS path,
        regexp_split_to_table(regexp_replace(regexp_replace(regexp_replace(
            regexp_replace(path, '\.[[:alnum:]]{1,8}$', ''),
            '([[:lower:][:digit:]])([[:upper:]])', '\1 \2', 'g'),
            '([[:upper:]]+)([[:upper:]][[:lower:]])', '\1 \2', 'g'),
            '[^[:alnum:]]+', ' ', 'g'), ' ') AS word
    WHERE word <> '' AND lower(word) NOT IN ('src', 'lib', 'test', 'tests')
$$
"""
DOCUMENT = """
CREATE FUNCTION memory_document(content text, summary text, tags text[]) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT to_tsvector('pg_catalog.english', content || ' ' || summary)
        || to_tsvector('pg_catalog.english',
            memory_code_words(content || ' ' || summary) || ' ' || memory_path_words(tags))
$$
"""
MATCH_KEYS = """
CREATE FUNCTION memory_match_keys(owner text, tag_keys text[], document tsvector)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ARRAY(
        SELECT owner || ':' || key FROM unnest(tag_keys) AS key
        UNION ALL
        SELECT owner || ':w:' || word FROM unnest(tsvector_to_array(document)) AS word
    )
$$
"""
OLD_MATCH_KEYS = """
CREATE FUNCTION memory_match_keys(owner text, tag_keys text[], content text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ARRAY(
        SELECT owner || ':' || key FROM unnest(tag_keys) AS key
        UNION ALL
        SELECT owner || ':w:' || word
        FROM unnest(tsvector_to_array(to_tsvector('pg_catalog.english', content))) AS word
    )
$$
"""


def _document():
    return models.Func(
        models.F("content"),
        models.F("summary"),
        django.db.models.functions.comparison.Cast(
            "tags", django.contrib.postgres.fields.ArrayField(base_field=models.TextField())
        ),
        function="memory_document",
        output_field=django.contrib.postgres.search.SearchVectorField(),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0019_undone"),
    ]

    operations = [
        migrations.RunSQL(
            [CODE_WORDS, PATH_WORDS, DOCUMENT, MATCH_KEYS],
            [
                "DROP FUNCTION memory_match_keys(text, text[], tsvector)",
                "DROP FUNCTION memory_document(text, text, text[])",
                "DROP FUNCTION memory_path_words(text[])",
                "DROP FUNCTION memory_code_words(text)",
            ],
        ),
        migrations.RemoveIndex(model_name="memory", name="memory_search_gin"),
        migrations.RemoveIndex(model_name="memory", name="memory_match_keys_gin"),
        migrations.RemoveField(model_name="memory", name="search_vector"),
        migrations.RemoveField(model_name="memory", name="match_keys"),
        migrations.RunSQL("DROP FUNCTION memory_match_keys(text, text[], text)", OLD_MATCH_KEYS),
        migrations.AddField(
            model_name="memory",
            name="search_vector",
            field=models.GeneratedField(
                db_persist=True,
                expression=_document(),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddField(
            model_name="memory",
            name="match_keys",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Func(
                    django.db.models.functions.comparison.Coalesce(
                        django.db.models.functions.comparison.Cast(
                            "project_id", models.TextField()
                        ),
                        models.Value("g"),
                    ),
                    models.F("tag_keys"),
                    _document(),
                    function="memory_match_keys",
                    output_field=django.contrib.postgres.fields.ArrayField(
                        base_field=models.TextField()
                    ),
                ),
                output_field=django.contrib.postgres.fields.ArrayField(
                    base_field=models.TextField()
                ),
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("active", True)),
                fields=["search_vector"],
                name="memory_search_gin",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("active", True)),
                fastupdate=True,
                fields=["match_keys"],
                gin_pending_list_limit=256,
                name="memory_match_keys_gin",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="memorypolicy",
            name="policy_weights_not_negative",
        ),
        migrations.AddField(
            model_name="memorypolicy",
            name="weight_path",
            field=models.FloatField(
                default=1.5, validators=[django.core.validators.MinValueValidator(0.0)]
            ),
        ),
        migrations.AddConstraint(
            model_name="memorypolicy",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("weight_entities__gte", 0),
                    ("weight_path__gte", 0),
                    ("weight_quality__gte", 0),
                    ("weight_recency__gte", 0),
                    ("weight_scope__gte", 0),
                    ("weight_semantic__gte", 0),
                    ("weight_text__gte", 0),
                ),
                name="policy_weights_not_negative",
            ),
        ),
    ]
