"""A project and its policy, as a key of the project sees them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from memories.models import MemoryType, Project
from memories.secrets import SecretsPolicy


@extend_schema_serializer(component_name="Policy")
class PolicyOut(serializers.Serializer):
    expiryDays = serializers.DictField(child=serializers.IntegerField(allow_null=True))
    selectionLimit = serializers.IntegerField()
    minConfidence = serializers.FloatField()
    deactivateBelow = serializers.FloatField()
    maxItems = serializers.IntegerField(allow_null=True)
    secrets = serializers.ChoiceField(
        choices=SecretsPolicy.CHOICES,
        help_text="A write holding a secret is rejected (400 naming where) or stored with the "
        "secret replaced by [REDACTED <kind>].",
    )


@extend_schema_serializer(component_name="Project")
class ProjectOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField()
    description = serializers.CharField()
    createdAt = serializers.DateTimeField()
    policy = PolicyOut()


def project_out(project: Project) -> dict[str, Any]:
    policy = project.policy
    return {
        "id": project.pk,
        "name": project.name,
        "slug": project.slug,
        "description": project.description,
        "createdAt": project.created_at,
        "policy": {
            "expiryDays": {kind: policy.expiry_days(kind) for kind in MemoryType.values},
            "selectionLimit": policy.selection_limit,
            "minConfidence": policy.min_confidence,
            "deactivateBelow": policy.deactivate_below,
            "maxItems": policy.max_items,
            "secrets": policy.secrets,
        },
    }


@extend_schema_serializer(component_name="ProjectList")
class ProjectListOut(serializers.Serializer):
    projects = ProjectOut(many=True)
