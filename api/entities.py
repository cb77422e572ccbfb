"""The entity graph in the API: a project's entities found by name, and one entity with the
memories that mention it and its neighbours (knowledge.graph)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.access import project_or_404
from api.common import PROJECT_PARAM, errors
from api.pagination import NamedCursorPagination
from knowledge import graph
from knowledge.models import Entity, EntityKind, LinkType
from memories.models import MemoryType, Project
from memories.text import is_whole_number

ENTITY_PARAM = OpenApiParameter("entity_id", OpenApiTypes.INT, OpenApiParameter.PATH)
MAX_QUERY = 200


class EntityOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField(help_text="As first written, e.g. `RetryQueue`.")
    kind = serializers.ChoiceField(
        choices=EntityKind.choices,
        help_text="`code` (CamelCase, snake_case, a call), `module` (dotted), `path` (a file"
        " or folder), `package`, `term` (a word the project marks as an entity).",
    )


class EntityMemoryOut(serializers.Serializer):
    id = serializers.IntegerField()
    type = serializers.ChoiceField(choices=MemoryType.choices)
    content = serializers.CharField(help_text="The memory's words, cut at 160 characters.")


class NeighbourOut(EntityOut):
    weight = serializers.IntegerField(
        help_text="How many active memories mention both (of each entity's 1,000 newest)."
    )
    type = serializers.ChoiceField(
        choices=LinkType.choices,
        help_text="`imports` (a memory says X imports Y), `defined_in` (a code name and a"
        " path mentioned together), `mentions` otherwise; or as a reviewer set it.",
    )
    source = serializers.ChoiceField(
        choices=[("mentions", "read from the memories"), ("reviewer", "added by a reviewer")]
    )
    depth = serializers.IntegerField(help_text="Hops from the entity asked for (1 to 3).")
    via = serializers.IntegerField(help_text="The entity of the hop before this one.")


class EntityDetailOut(EntityOut):
    memories = EntityMemoryOut(many=True, help_text="Active memories mentioning it, newest first.")
    neighbours = NeighbourOut(many=True, help_text="Heaviest first within each hop.")


class EntityPagination(NamedCursorPagination):
    items_key = "entities"
    ordering = ("key", "id")


def entity_out(entity: Entity) -> dict[str, Any]:
    return {"id": entity.pk, "name": entity.name, "kind": entity.kind}


def neighbour_out(neighbour: graph.Neighbour) -> dict[str, Any]:
    return {
        "id": neighbour.id,
        "name": neighbour.name,
        "kind": neighbour.kind,
        "weight": neighbour.weight,
        "type": neighbour.type,
        "source": neighbour.source,
        "depth": neighbour.depth,
        "via": neighbour.via,
    }


def entity_detail_out(entity: Entity, depth: int) -> dict[str, Any]:
    return {
        **entity_out(entity),
        "memories": [
            {"id": m.id, "type": m.type, "content": m.content}
            for m in graph.entity_memories(entity_id=entity.pk)
        ],
        "neighbours": [neighbour_out(n) for n in graph.neighbours(entity=entity, depth=depth)],
    }


def _entity_or_404(project: Project, entity_id: int) -> Entity:
    entity = Entity.objects.filter(project=project, pk=entity_id).first()
    if entity is None:
        raise NotFound(f"No entity {entity_id} in project {project.slug}.")
    return entity


def _whole(request: Request, name: str, low: int, high: int | None, default: int | None) -> Any:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    top = "" if high is None else f" to {high}"
    if not is_whole_number(raw) or len(raw) > 18 or int(raw) < low or (high and int(raw) > high):
        raise ValidationError({name: [f"Must be a whole number from {low}{top} (got {raw!r})."]})
    return int(raw)


class EntityList(generics.GenericAPIView):
    pagination_class = EntityPagination
    serializer_class = EntityOut

    @extend_schema(
        parameters=[
            PROJECT_PARAM,
            OpenApiParameter(
                "q",
                {"type": "string", "maxLength": MAX_QUERY},
                description="Names that start with it or hold it as a word part, in any case"
                " (`queue` finds `RetryQueue` and `src/billing/queue.py`).",
            ),
            OpenApiParameter("kind", OpenApiTypes.STR, enum=EntityKind.values),
            OpenApiParameter(
                "memory", {"type": "integer", "minimum": 1}, description="Those it mentions."
            ),
        ],
        responses={200: EntityOut(many=True), **errors(400)},
        summary="The names the project's active memories mention, by name",
    )
    def get(self, request: Request, project: str) -> Response:
        target = project_or_404(request, project)
        q = request.query_params.get("q", "").strip()
        if len(q) > MAX_QUERY:
            raise ValidationError({"q": [f"At most {MAX_QUERY} characters (got {len(q)})."]})
        kind = request.query_params.get("kind") or None
        if kind is not None and kind not in EntityKind.values:
            raise ValidationError({"kind": [f"Use one of: {', '.join(EntityKind.values)}."]})
        memory_id = _whole(request, "memory", 1, None, None)
        found = graph.entities_search(project=target, q=q, kind=kind, memory_id=memory_id)
        page = self.paginate_queryset(found)
        assert page is not None
        return self.get_paginated_response([entity_out(entity) for entity in page])


class EntityDetail(APIView):
    @extend_schema(
        parameters=[
            PROJECT_PARAM,
            ENTITY_PARAM,
            OpenApiParameter(
                "depth",
                {"type": "integer", "minimum": 1, "maximum": graph.MAX_DEPTH},
                description=f"Hops of neighbours (1 to {graph.MAX_DEPTH}, default 1); each hop"
                f" the {graph.FAN_OUT} heaviest.",
            ),
        ],
        responses={200: EntityDetailOut, **errors(400)},
        summary="One entity: the memories that mention it and its neighbours",
    )
    def get(self, request: Request, project: str, entity_id: int) -> Response:
        target = project_or_404(request, project)
        depth = _whole(request, "depth", 1, graph.MAX_DEPTH, 1)
        return Response(entity_detail_out(_entity_or_404(target, entity_id), depth))
