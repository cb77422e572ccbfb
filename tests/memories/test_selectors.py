from __future__ import annotations

from django.db import connection

from memories import services
from memories.selectors import api_key_for_token


def test_the_key_lookup_is_planned_once_per_connection(project):
    key, token = services.api_key_create(project=project, name="agent")
    for _ in range(3):
        assert api_key_for_token(token) == key
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%FROM memories_apikey k%"],
        )
        assert cursor.fetchone()[0] == 1
    services.api_key_revoke(api_key=key)
    assert api_key_for_token(token) is None  # the plan is kept, not the answer
