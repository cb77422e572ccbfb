"""POST /api/projects/:id/changes: a commit's changed paths flag the memories about them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.access import project_or_404, require_reviewer
from api.auth import actor_for
from api.common import PROJECT_PARAM, WRITE_ERRORS, errors, valid
from api.serializers.changes import ChangesIn, ChangesOut
from policies.staleness import memories_mark_changed


class ProjectChanges(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM],
        request=ChangesIn,
        responses={200: ChangesOut, **errors(*WRITE_ERRORS)},
        summary="Report a commit's changed paths: memories about them are flagged stale",
        description=(
            "Every active memory whose tags match one of the paths is flagged for re-review"
            " and loses the policy's staleness penalty of confidence, recorded in its history"
            " with the ref. Reporting the same ref again changes nothing."
        ),
    )
    def post(self, request: Request, project: str) -> Response:
        target = project_or_404(request, project)
        require_reviewer(request, target, "report code changes")
        data = valid(ChangesIn, request.data)
        result = memories_mark_changed(
            project=target, paths=data["paths"], ref=data["ref"], actor=actor_for(request)
        )
        return Response(
            {"ref": result.ref, "marked": len(result.memory_ids), "memoryIds": result.memory_ids}
        )
