"""The one error shape of every 4xx and 5xx answer, for the OpenAPI schema."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers


class ErrorDetail(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `invalid`.")
    message = serializers.CharField(help_text="What went wrong and what to fix.")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Messages per input field (camelCase), when fields are at fault.",
    )


@extend_schema_serializer(component_name="Error")
class ErrorOut(serializers.Serializer):
    error = ErrorDetail()
