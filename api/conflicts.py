"""Repeats and conflicts in the API: the pairs found, deciding them, and superseding a memory."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.access import (
    global_memories,
    project_memory_or_404,
    project_or_404,
    require_reviewer,
)
from api.auth import actor_for
from api.common import MEMORY_PARAM, PROJECT_PARAM, WRITE_ERRORS, errors, valid
from api.pagination import NamedCursorPagination
from api.serializers.conflicts import (
    ConflictOut,
    ResolveIn,
    SupersedeIn,
    SupersedeWaitingOut,
    conflict_out,
)
from api.serializers.memories import MemoryOut, memory_out
from knowledge import decisions, supersedes
from knowledge.models import MemoryPair, PairKind, PairStatus
from knowledge.queries import open_pairs
from memories.models import Memory, Project

CONFLICT_PARAM = OpenApiParameter("conflict_id", OpenApiTypes.INT, OpenApiParameter.PATH)
STATUSES = (*PairStatus.values, "any")


class ConflictPagination(NamedCursorPagination):
    items_key = "conflicts"


def project_pairs(project: Project) -> QuerySet[MemoryPair]:
    return MemoryPair.objects.filter(project=project)


def _pair_or_404(project: Project, conflict_id: int) -> MemoryPair:
    pair = project_pairs(project).filter(pk=conflict_id).first()
    if pair is None:
        raise NotFound(f"No conflict {conflict_id} in project {project.slug}.")
    return pair


def _choice(request: Request, name: str, choices: tuple[str, ...], default: str) -> str:
    value = request.query_params.get(name, default)
    if value not in choices:
        raise ValidationError({name: [f"Use one of: {', '.join(choices)}."]})
    return value


class ConflictList(generics.GenericAPIView):
    pagination_class = ConflictPagination
    serializer_class = ConflictOut

    @extend_schema(
        parameters=[
            PROJECT_PARAM,
            OpenApiParameter(
                "kind", OpenApiTypes.STR, enum=[*PairKind.values, "any"], description="Default any."
            ),
            OpenApiParameter(
                "status",
                OpenApiTypes.STR,
                enum=list(STATUSES),
                description="Default open (both memories still active).",
            ),
        ],
        responses={200: ConflictOut(many=True), **errors(400)},
        summary="Pairs of memories that repeat or may contradict each other",
    )
    def get(self, request: Request, project: str) -> Response:
        target = project_or_404(request, project)
        kind = _choice(request, "kind", (*PairKind.values, "any"), "any")
        wanted = _choice(request, "status", STATUSES, PairStatus.OPEN)
        pairs = project_pairs(target)
        if wanted == PairStatus.OPEN:
            pairs = open_pairs(pairs)
        elif wanted != "any":
            pairs = pairs.filter(status=wanted)
        if kind != "any":
            pairs = pairs.filter(kind=kind)
        page = self.paginate_queryset(pairs)
        assert page is not None
        return self.get_paginated_response([conflict_out(pair) for pair in page])


class ConflictDetail(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, CONFLICT_PARAM], responses={200: ConflictOut, **errors()}
    )
    def get(self, request: Request, project: str, conflict_id: int) -> Response:
        target = project_or_404(request, project)
        return Response(conflict_out(_pair_or_404(target, conflict_id)))


class ConflictResolve(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, CONFLICT_PARAM],
        request=ResolveIn,
        responses={200: ConflictOut, **errors(*WRITE_ERRORS, 409)},
        summary="Decide a pair: keep one, merge, dismiss (not a conflict) or reject one",
        description="An API key may decide only where no approved or global memory changes;"
        " the rest waits for a reviewer (403 says so).",
    )
    def post(self, request: Request, project: str, conflict_id: int) -> Response:
        target = project_or_404(request, project)
        pair = _pair_or_404(target, conflict_id)
        require_reviewer(request, target, "resolve conflicts")
        data = valid(ResolveIn, request.data)
        if data["action"] in ("keep", "reject") and data["memoryId"] is None:
            raise ValidationError({"memoryId": [f"Name the memory to {data['action']}."]})
        pair = decisions.pair_resolve(
            pair_id=pair.pk,
            action=data["action"],
            actor=actor_for(request),
            memory_id=data["memoryId"],
            content=data.get("content"),
            type=data.get("type"),
            tags=data.get("tags"),
            reason=data["reason"],
        )
        return Response(conflict_out(pair))


class MemorySupersede(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        request=SupersedeIn,
        responses={
            200: OpenApiResponse(MemoryOut, description="Superseded now."),
            202: OpenApiResponse(
                SupersedeWaitingOut,
                description="An approved or global memory: a conflict waits for a reviewer.",
            ),
            **errors(*WRITE_ERRORS, 409),
        },
        summary="Say another memory replaces this one (archived, restorable)",
    )
    def post(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        memory = project_memory_or_404(target, memory_id)
        require_reviewer(request, target, "supersede memories")
        data = valid(SupersedeIn, request.data)
        # Of this project, or a global memory the caller may read.
        by = (
            Memory.objects.filter(
                Q(project=target) | Q(pk__in=global_memories(request).values("pk")), pk=data["by"]
            )
            .defer("search_vector", "match_keys")
            .first()
        )
        if by is None:
            raise ValidationError({"by": [f"No memory {data['by']} in this project."]})
        result = supersedes.memory_supersede(
            memory=memory, by=by, actor=actor_for(request), reason=data["reason"]
        )
        if result.waiting:
            return Response(
                {
                    "status": "waiting",
                    "message": f"Memory {memory.pk} is approved or global: a reviewer decides."
                    f" Conflict {result.waiting[0].pk} waits for one.",
                    "conflict": conflict_out(result.waiting[0]),
                },
                status=status.HTTP_202_ACCEPTED,
            )
        memory = project_memory_or_404(target, memory_id)
        return Response(memory_out(memory, supersedes.live_successors([memory.pk])))
