"""The runs of the REST API: start a run, read it and what it was given, report its outcome."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.access import project_or_404, require_reviewer
from api.auth import actor_for
from api.common import PROJECT_PARAM, RUN_PARAM, WRITE_ERRORS, created_response, errors, valid
from api.errors import camel
from api.serializers.runs import OutcomeIn, OutcomeOut, RunCreateIn, RunDetailOut, RunOut, run_out
from memories import services
from memories.models import Project, Run


class RunCreate(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM],
        request=RunCreateIn,
        responses={
            201: RunOut,
            200: OpenApiResponse(RunOut, description="The run already existed, unchanged."),
            **errors(*WRITE_ERRORS, 409),
        },
        summary="Start a run",
    )
    def post(self, request: Request, project: str) -> Response:
        target = project_or_404(request, project)
        require_reviewer(request, target, "start runs")
        data = valid(RunCreateIn, request.data)
        run, created = services.run_start(
            project=target,
            external_id=data["externalId"],
            task_title=data["taskTitle"],
            write_scope=data["writeScope"],
            actor=actor_for(request),
        )
        if not created:
            return Response(run_out(run), status=status.HTTP_200_OK)
        return created_response(run_out(run), "api:run", project=target.slug, run_id=run.pk)


def _run_or_404(project: Project, run_id: int) -> Run:
    run = Run.objects.filter(project=project, pk=run_id).first()
    if run is None:
        raise NotFound(f"No run {run_id} in project {project.slug}.")
    return run


class RunDetail(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, RUN_PARAM],
        responses={200: RunDetailOut, **errors()},
        summary="A run, its outcome and the memories it was given",
    )
    def get(self, request: Request, project: str, run_id: int) -> Response:
        run = _run_or_404(project_or_404(request, project), run_id)
        given = run.given.order_by("rank").values("memory_id", "rank", "score", "parts", "used")
        return Response(
            {
                **run_out(run),
                "given": [
                    {
                        "memoryId": g["memory_id"],
                        "rank": g["rank"],
                        "score": g["score"],
                        "scoreParts": {camel(name): value for name, value in g["parts"].items()},
                        "used": g["used"],
                    }
                    for g in given
                ],
            }
        )


class RunOutcome(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, RUN_PARAM],
        request=OutcomeIn,
        responses={200: OutcomeOut, **errors(*WRITE_ERRORS, 409)},
        summary="Report a run's outcome: moves the confidence of what it was given",
    )
    def post(self, request: Request, project: str, run_id: int) -> Response:
        target = project_or_404(request, project)
        run = _run_or_404(target, run_id)
        require_reviewer(request, target, "report outcomes")
        data = valid(OutcomeIn, request.data)
        result = services.run_record_outcome(
            run=run,
            outcome=data["outcome"],
            actor=actor_for(request),
            used_memory_ids=data.get("usedMemoryIds"),
        )
        return Response(
            {
                "run": run_out(result.run),
                "recorded": result.recorded,
                "memories": [
                    {"id": m.pk, "confidence": m.confidence, "active": m.active}
                    for m in result.changes.changed
                ],
                "paused": result.paused_ids,
            }
        )
