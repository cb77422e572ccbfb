"""A commit's changed paths in, the memories flagged stale by them out."""

from __future__ import annotations

from rest_framework import serializers

from api.fields import StrictCharField, StrictInput


class ChangesIn(StrictInput):
    paths = serializers.ListField(
        child=StrictCharField(max_length=500, visible=True),
        min_length=1,
        max_length=500,
        help_text=(
            "The paths the commit or merge changed, up to 500 per request: send more in"
            " several requests with the same ref (a memory is flagged once per ref)."
        ),
    )
    ref = StrictCharField(max_length=200, visible=True, help_text="The commit or merge.")


class ChangesOut(serializers.Serializer):
    ref = serializers.CharField()
    marked = serializers.IntegerField(help_text="Memories flagged stale by this change.")
    memoryIds = serializers.ListField(child=serializers.IntegerField())
