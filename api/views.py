"""The REST API: projects, memories and their history, global memories, the export. Runs
are in api/runs.py, /changes in api/changes.py, /context in api/context.py, what every
endpoint shares in api/common.py. Views parse, check access, call one service and render;
nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib.postgres.aggregates import JSONBAgg
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.db.models.functions import JSONObject
from django.http import StreamingHttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.access import (
    global_memories,
    global_memory_or_404,
    project_memory_or_404,
    project_or_404,
    projects_for,
    require_global_reader,
    require_proposer,
    require_reviewer,
)
from api.auth import actor_for, api_key_of
from api.common import (
    IDEMPOTENCY_PARAM,
    MEMORY_PARAM,
    PROJECT_PARAM,
    WRITE_ERRORS,
    created_response,
    errors,
    valid,
)
from api.errors import ConflictError
from api.filters import CamelOrderingFilter, MemoryFilter
from api.idempotency import idempotent
from api.pagination import EventPagination, MemoryPagination
from api.serializers.conflicts import conflict_out
from api.serializers.memories import (
    EventOut,
    FlagIn,
    GlobalMemoryCreateIn,
    MemoryCreatedOut,
    MemoryCreateIn,
    MemoryOut,
    MemoryUpdateIn,
    RejectIn,
    event_out,
    memory_out,
)
from api.serializers.projects import ProjectListOut, ProjectOut, project_out
from api.serializers.runs import run_out
from knowledge import supersedes
from knowledge.models import MemoryPair
from knowledge.queries import open_pairs
from memories import selectors, services
from memories.locks import retried_call
from memories.models import Memory, Project, Run, Scope, Source


def _memories(project: Project) -> QuerySet[Memory]:
    return (
        Memory.objects.filter(project=project)
        .exclude(scope=Scope.GLOBAL)
        .select_related("approved_by")
        .defer("search_vector", "match_keys")
    )


def _memories_out(memories: list[Memory]) -> list[dict[str, Any]]:
    """Memories as the API shows them, superseded ones with the live end of their chain
    (one query, only when the page holds one)."""
    superseded = [m.pk for m in memories if m.superseded_by_id]
    live = supersedes.live_successors(superseded) if superseded else {}
    return [memory_out(memory, live) for memory in memories]


def _check_source(request: Request, source: str) -> None:
    if source == Source.HUMAN and api_key_of(request) is not None:
        raise PermissionDenied(
            "An API key writes as an agent: use source 'run' or 'learning'. "
            "Memories with source 'human' are written by signed-in people."
        )


class ProjectList(APIView):
    @extend_schema(
        operation_id="projects_list",
        responses={200: ProjectListOut, **errors()},
        summary="Projects the caller may see",
    )
    def get(self, request: Request) -> Response:
        return Response({"projects": [project_out(p) for p in projects_for(request)]})


class ProjectDetail(APIView):
    @extend_schema(parameters=[PROJECT_PARAM], responses={200: ProjectOut, **errors()})
    def get(self, request: Request, project: str) -> Response:
        return Response(project_out(project_or_404(request, project)))


class MemoryListCreate(generics.GenericAPIView):
    filter_backends = [DjangoFilterBackend, CamelOrderingFilter]
    filterset_class = MemoryFilter
    pagination_class = MemoryPagination
    ordering = ["-created_at", "-id"]
    serializer_class = MemoryOut
    queryset = Memory.objects.none()

    def get_queryset(self) -> QuerySet[Memory]:
        return _memories(project_or_404(self.request, self.kwargs["project"]))

    @extend_schema(
        parameters=[PROJECT_PARAM],
        responses={200: MemoryOut(many=True), **errors(400)},
        summary="List a project's memories",
    )
    def get(self, request: Request, project: str) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None
        return self.get_paginated_response(_memories_out(page))

    @extend_schema(
        parameters=[PROJECT_PARAM, IDEMPOTENCY_PARAM],
        request=MemoryCreateIn,
        responses={201: MemoryCreatedOut, **errors(*WRITE_ERRORS, 409)},
        summary="Store a memory",
        description="The answer also names the repeats and possible conflicts found as it was"
        " written (`conflicts`), and what `supersedes` did (`superseded`).",
    )
    def post(self, request: Request, project: str) -> Response:
        target = project_or_404(request, project)
        require_reviewer(request, target, "add memories")
        # Its transaction is the outermost: one rolled back for a deadlock runs once more.
        return retried_call(idempotent, request, target, lambda: self._create(request, target))

    def _create(self, request: Request, project: Project) -> Response:
        data = valid(MemoryCreateIn, request.data)
        _check_source(request, data["source"])
        source_run = None
        if data["sourceRunId"] is not None:
            source_run = Run.objects.filter(project=project, pk=data["sourceRunId"]).first()
            if source_run is None:
                raise ValidationError({"sourceRunId": ["No run with this id in this project."]})
        optional = {"expires_at": data["expiresAt"]} if "expiresAt" in data else {}
        with transaction.atomic():
            memory, superseded = self._store(request, project, data, source_run, optional)
        found = open_pairs(MemoryPair.objects.filter(Q(first=memory) | Q(second=memory)))
        body = {
            **memory_out(memory),
            "superseded": {
                "done": superseded.done,
                "waiting": [pair.pk for pair in superseded.waiting],
            },
            "conflicts": [conflict_out(pair) for pair in found.order_by("id")],
        }
        return created_response(body, "api:memory", project=project.slug, memory_id=memory.pk)

    def _store(
        self,
        request: Request,
        project: Project,
        data: dict[str, Any],
        source_run: Run | None,
        optional: dict[str, Any],
    ) -> tuple[Memory, supersedes.Superseded]:
        actor = actor_for(request)
        memory = services.memory_create(
            project=project,
            scope=data["scope"],
            type=data["type"],
            content=data["content"],
            tags=data["tags"],
            relevance_score=data["relevanceScore"],
            source=data["source"],
            source_run=source_run,
            summary=data.get("summary"),
            actor=actor,
            **optional,
        )
        superseded = supersedes.Superseded()
        if data["supersedes"]:
            superseded = supersedes.supersede_on_create(
                memory=memory, ids=data["supersedes"], actor=actor
            )
        return memory, superseded


class MemoryDetail(APIView):
    @extend_schema(parameters=[PROJECT_PARAM, MEMORY_PARAM], responses={200: MemoryOut, **errors()})
    def get(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        return Response(_memories_out([project_memory_or_404(target, memory_id)])[0])

    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        request=MemoryUpdateIn,
        responses={200: MemoryOut, **errors(*WRITE_ERRORS)},
        summary="Change what a memory says",
    )
    def patch(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        memory = project_memory_or_404(target, memory_id)
        require_reviewer(request, target, "change memories")
        data = valid(MemoryUpdateIn, request.data)
        names = {"relevanceScore": "relevance_score", "expiresAt": "expires_at"}
        changes = {names.get(k, k): v for k, v in data.items() if k != "reason"}
        if not changes:
            return Response(memory_out(memory))  # nothing to change: a no-op, no history
        services.memory_update(
            memory=memory, actor=actor_for(request), reason=data.get("reason", ""), **changes
        )
        return Response(memory_out(project_memory_or_404(target, memory_id)))

    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        request=None,
        responses={204: None, **errors(403)},
        summary="Delete a memory (its history stays)",
    )
    def delete(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        memory = project_memory_or_404(target, memory_id)
        require_reviewer(request, target, "delete memories")
        services.memories_delete(memory_ids=[memory.pk], actor=actor_for(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemoryApprove(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        request=None,
        responses={200: MemoryOut, **errors(403)},
        summary="Approve (reviewers only): confidence 1.0",
    )
    def patch(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        memory = project_memory_or_404(target, memory_id)
        services.memory_approve(memory=memory, actor=actor_for(request))
        return Response(memory_out(project_memory_or_404(target, memory_id)))


class MemoryReject(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        request=RejectIn,
        responses={200: MemoryOut, **errors(*WRITE_ERRORS)},
        summary="Reject (reviewers only): inactive",
    )
    def patch(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        memory = project_memory_or_404(target, memory_id)
        data = valid(RejectIn, request.data or {})
        services.memory_reject(memory=memory, actor=actor_for(request), reason=data["reason"])
        return Response(memory_out(project_memory_or_404(target, memory_id)))


class MemoryFlag(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        request=FlagIn,
        responses={200: MemoryOut, **errors(*WRITE_ERRORS)},
        summary="Flag a memory that looks wrong or stale: it waits for re-review",
        description="Sets `staleAt` (and `staleRef` to `flagged`) and records the reason in"
        " the memory's history; a reviewer's approval clears the flag. Flagging again keeps"
        " the first `staleAt`.",
    )
    def post(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        memory = project_memory_or_404(target, memory_id)
        require_reviewer(request, target, "flag memories")
        data = valid(FlagIn, request.data)
        services.memory_flag(memory=memory, actor=actor_for(request), reason=data["reason"])
        return Response(_memories_out([project_memory_or_404(target, memory_id)])[0])


class MemoryRestore(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        request=None,
        responses={200: MemoryOut, **errors(403, 409)},
        summary="Restore an archived memory (evicted, merged or cleared): active again",
    )
    def post(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        memory = project_memory_or_404(target, memory_id)
        require_reviewer(request, target, "restore memories")
        if memory.archived_at is None:
            raise ConflictError("This memory is not archived: there is nothing to restore.")
        services.memories_restore(memory_ids=[memory.pk], actor=actor_for(request))
        return Response(memory_out(project_memory_or_404(target, memory_id)))


class MemoryRestoreContent(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        request=None,
        responses={200: MemoryOut, **errors(403, 409)},
        summary="Give a compressed memory its original content back",
    )
    def post(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        memory = project_memory_or_404(target, memory_id)
        require_reviewer(request, target, "restore memories")
        result = services.memories_restore_content(memory_ids=[memory.pk], actor=actor_for(request))
        if not result.changed:
            raise ConflictError("This memory has no compressed content to restore.")
        return Response(memory_out(project_memory_or_404(target, memory_id)))


class MemoryHistory(generics.GenericAPIView):
    pagination_class = EventPagination
    serializer_class = EventOut

    @extend_schema(
        parameters=[PROJECT_PARAM, MEMORY_PARAM],
        responses={200: EventOut(many=True), **errors(400)},
        summary="Every change to a memory: who, what, why",
    )
    def get(self, request: Request, project: str, memory_id: int) -> Response:
        target = project_or_404(request, project)
        events = selectors.memory_history(memory_id=memory_id).filter(project=target)
        if not events.exists():
            raise NotFound(f"No memory {memory_id} in project {target.slug}.")
        page = self.paginate_queryset(events)
        assert page is not None
        return self.get_paginated_response([event_out(event) for event in page])


class GlobalMemories(generics.GenericAPIView):
    filter_backends = [DjangoFilterBackend, CamelOrderingFilter]
    filterset_class = MemoryFilter
    pagination_class = MemoryPagination
    ordering = ["-created_at", "-id"]
    serializer_class = MemoryOut
    queryset = Memory.objects.none()

    def get_queryset(self) -> QuerySet[Memory]:
        return (
            global_memories(self.request)
            .select_related("approved_by")
            .defer("search_vector", "match_keys")
        )

    @extend_schema(
        responses={200: MemoryOut(many=True), **errors(400)},
        summary="Global memories (active ones by default; `active=false` for proposals)",
        description="A proposal not yet approved is listed only for global reviewers and the"
        " project that proposed it.",
    )
    def get(self, request: Request) -> Response:
        require_global_reader(request)
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None
        return self.get_paginated_response([memory_out(memory) for memory in page])

    @extend_schema(
        request=GlobalMemoryCreateIn,
        responses={201: MemoryOut, **errors(*WRITE_ERRORS)},
        summary="Propose a global memory (inactive until a reviewer approves it)",
    )
    def post(self, request: Request) -> Response:
        require_global_reader(request)
        require_proposer(request)
        data = valid(GlobalMemoryCreateIn, request.data)
        _check_source(request, data["source"])
        memory = services.memory_create(
            project=None,
            type=data["type"],
            content=data["content"],
            tags=data["tags"],
            relevance_score=data["relevanceScore"],
            source=data["source"],
            summary=data.get("summary"),
            actor=actor_for(request),
        )
        return created_response(memory_out(memory), "api:global-memory", memory_id=memory.pk)


class GlobalMemoryDetail(APIView):
    @extend_schema(parameters=[MEMORY_PARAM], responses={200: MemoryOut, **errors()})
    def get(self, request: Request, memory_id: int) -> Response:
        require_global_reader(request)
        return Response(memory_out(global_memory_or_404(request, memory_id)))


class GlobalMemoryApprove(APIView):
    @extend_schema(
        parameters=[MEMORY_PARAM],
        request=None,
        responses={200: MemoryOut, **errors(403)},
        summary="Approve a global memory (reviewers only): it becomes active",
    )
    def patch(self, request: Request, memory_id: int) -> Response:
        require_global_reader(request)
        memory = global_memory_or_404(request, memory_id)
        services.memory_approve(memory=memory, actor=actor_for(request))
        return Response(memory_out(global_memory_or_404(request, memory_id)))


class GlobalMemoryReject(APIView):
    @extend_schema(
        parameters=[MEMORY_PARAM],
        request=RejectIn,
        responses={200: MemoryOut, **errors(*WRITE_ERRORS)},
        summary="Reject a global memory (reviewers only)",
    )
    def patch(self, request: Request, memory_id: int) -> Response:
        require_global_reader(request)
        memory = global_memory_or_404(request, memory_id)
        data = valid(RejectIn, request.data or {})
        services.memory_reject(memory=memory, actor=actor_for(request), reason=data["reason"])
        return Response(memory_out(global_memory_or_404(request, memory_id)))


class ProjectExport(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                OpenApiTypes.STR,
                description='JSON Lines: one `{"kind": "memory", ...}` per memory, then '
                'one `{"kind": "run", ...}` per run with the memories it was given.',
            ),
            **errors(),
        },
        summary="Export memories and runs with outcomes as JSON Lines (streamed)",
    )
    def get(self, request: Request, project: str) -> StreamingHttpResponse:
        target = project_or_404(request, project)
        response = StreamingHttpResponse(_export_lines(target), content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="{target.slug}.jsonl"'
        return response


def _export_lines(project: Project) -> Iterator[bytes]:
    renderer = JSONRenderer()
    memories = _memories(project).order_by("id")
    for memory in memories.iterator(chunk_size=1000):
        yield renderer.render({"kind": "memory", **memory_out(memory)}) + b"\n"
    runs = (
        Run.objects.filter(project=project)
        .order_by("id")
        .annotate(
            given_memories=JSONBAgg(
                JSONObject(
                    memoryId=F("given__memory_id"), rank=F("given__rank"), score=F("given__score")
                ),
                filter=Q(given__isnull=False),
                order_by="given__rank",
                default=[],
            )
        )
    )
    for run in runs.iterator(chunk_size=500):
        yield (
            renderer.render({"kind": "run", **run_out(run), "given": run.given_memories}) + b"\n"
        )
