"""Users' preferences over REST: set, read, list (by category), delete and the history of one
key; those meant for every project proposed, then approved or rejected; and all of one user's
data in a project deleted in one call. Views parse, check access, call people.preferences."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.access import project_or_404, require_global_reader, require_proposer, require_reviewer
from api.auth import actor_for, api_key_of
from api.common import PROJECT_PARAM, WRITE_ERRORS, errors, valid
from api.serializers.preferences import (
    ErasedOut,
    GlobalPreferenceIn,
    PreferenceEventOut,
    PreferenceIn,
    PreferenceListOut,
    PreferenceOut,
    event_out,
    preference_out,
)
from memories import roles
from memories.models import Project
from people import preferences, users
from people.models import Preference, PreferenceStatus
from people.users import clean_user_ref

USER_ID = {"type": "string", "maxLength": 200, "pattern": users.ID_PATTERN}
NAME = {"type": "string", "maxLength": 200, "pattern": preferences.NAME_PATTERN}
USER_PARAM = OpenApiParameter(
    "user", USER_ID, OpenApiParameter.PATH, description="The user, as your system names them."
)
KEY_PARAM = OpenApiParameter("key", NAME, OpenApiParameter.PATH)
CATEGORY_PARAM = OpenApiParameter(
    "category",
    {**NAME, "maxLength": 100},
    OpenApiParameter.QUERY,
    description="Only this category.",
)


def _in_force_or_404(project: Project, user: str, key: str) -> Preference:
    key = preferences.clean_key(key)
    for preference in preferences.in_force(project, clean_user_ref(user, "user")):
        if preference.key == key:
            return preference
    raise NotFound(f"User {user!r} has no preference {key!r} in project {project.slug}.")


class PreferenceList(APIView):
    @extend_schema(
        operation_id="projects_users_preferences_list",
        parameters=[PROJECT_PARAM, USER_PARAM, CATEGORY_PARAM],
        responses={200: PreferenceListOut, **errors(400)},
        summary="A user's preferences in force here: the project's, then those for every project",
    )
    def get(self, request: Request, project: str, user: str) -> Response:
        target = project_or_404(request, project)
        user = clean_user_ref(user, "user")
        category = request.query_params.get("category")
        if category == "":
            raise ValidationError({"category": "Give a category, or leave the parameter out."})
        if category is not None:
            category = preferences.clean_category(category)
        found = [
            p
            for p in preferences.in_force(target, user)
            if category is None or p.category == category
        ]
        return Response({"userId": user, "preferences": [preference_out(p) for p in found]})


class PreferenceDetail(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, USER_PARAM, KEY_PARAM],
        responses={200: PreferenceOut, **errors(400)},
        summary="One preference of a user (the project's, else the one for every project)",
    )
    def get(self, request: Request, project: str, user: str, key: str) -> Response:
        target = project_or_404(request, project)
        return Response(preference_out(_in_force_or_404(target, user, key)))

    @extend_schema(
        parameters=[PROJECT_PARAM, USER_PARAM, KEY_PARAM],
        request=PreferenceIn,
        responses={
            200: PreferenceOut,
            201: OpenApiResponse(PreferenceOut, description="Set for the first time."),
            **errors(*WRITE_ERRORS),
        },
        summary="Set a user's preference in this project",
    )
    def put(self, request: Request, project: str, user: str, key: str) -> Response:
        target = project_or_404(request, project)
        require_reviewer(request, target, "set preferences")
        data = valid(PreferenceIn, request.data)
        written = preferences.set_preference(
            project=target,
            user_ref=clean_user_ref(user, "user"),
            key=key,
            value=data["value"],
            category=data.get("category"),
            actor=actor_for(request),
        )
        code = status.HTTP_201_CREATED if written.created else status.HTTP_200_OK
        return Response(preference_out(written.preference), status=code)

    @extend_schema(
        parameters=[PROJECT_PARAM, USER_PARAM, KEY_PARAM],
        request=None,
        responses={204: None, **errors(400, 403)},
        summary="Delete a user's preference in this project (its history stays)",
    )
    def delete(self, request: Request, project: str, user: str, key: str) -> Response:
        target = project_or_404(request, project)
        require_reviewer(request, target, "delete preferences")
        user = clean_user_ref(user, "user")
        if not preferences.delete_preference(
            project=target, user_ref=user, key=key, actor=actor_for(request)
        ):
            raise NotFound(f"User {user!r} has no preference {key!r} in project {target.slug}.")
        return Response(status=status.HTTP_204_NO_CONTENT)


class PreferenceHistory(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, USER_PARAM, KEY_PARAM],
        responses={200: PreferenceEventOut(many=True), **errors(400)},
        summary="Every change to one preference of a user, newest first, and who made it",
    )
    def get(self, request: Request, project: str, user: str, key: str) -> Response:
        target = project_or_404(request, project)
        events = preferences.history(target, clean_user_ref(user, "user"), key)[:200]
        return Response([event_out(e) for e in events])


class UserData(APIView):
    @extend_schema(
        parameters=[PROJECT_PARAM, USER_PARAM],
        request=None,
        responses={200: ErasedOut, **errors(400, 403)},
        summary="Delete all of a user's data here: preferences, their history, conversations",
    )
    def delete(self, request: Request, project: str, user: str) -> Response:
        target = project_or_404(request, project)
        require_reviewer(request, target, "delete a user's data")
        user = clean_user_ref(user, "user")
        counts = preferences.erase_user(project=target, user_ref=user, actor=actor_for(request))
        return Response({"userId": user, **counts})


# --- for every project ---------------------------------------------------------------------


def _global_visible(request: Request) -> Q:
    """Approved ones for everybody; proposals for reviewers of global memories and the
    project that proposed them."""
    approved = Q(status=PreferenceStatus.APPROVED)
    api_key = api_key_of(request)
    if api_key is not None:
        return approved | Q(proposed_in_id=api_key.project_id)
    if actor_for(request).can_review(None):
        return Q()
    return approved | Q(proposed_in__in=roles.projects_for(request.user))


def _global_or_404(request: Request, preference_id: int) -> Preference:
    found = Preference.objects.filter(
        _global_visible(request), project__isnull=True, pk=preference_id
    ).first()
    if found is None:
        raise NotFound(f"No preference {preference_id} for every project.")
    return found


USER_QUERY = OpenApiParameter("userId", USER_ID, OpenApiParameter.QUERY)
STATUS_QUERY = OpenApiParameter(
    "status", OpenApiTypes.STR, OpenApiParameter.QUERY, enum=PreferenceStatus.values
)


class GlobalPreferences(APIView):
    @extend_schema(
        parameters=[USER_QUERY, STATUS_QUERY],
        responses={200: PreferenceOut(many=True), **errors(400)},
        summary="Preferences for every project (proposals: reviewers and their project)",
    )
    def get(self, request: Request) -> Response:
        require_global_reader(request)
        found = Preference.objects.filter(_global_visible(request), project__isnull=True)
        user = request.query_params.get("userId")
        if user is not None:
            found = found.filter(user_ref=clean_user_ref(user))
        wanted = request.query_params.get("status")
        if wanted is not None:
            if wanted not in PreferenceStatus.values:
                allowed = ", ".join(PreferenceStatus.values)
                raise ValidationError({"status": f"One of: {allowed}."})
            found = found.filter(status=wanted)
        rows = found.order_by("user_ref", "key", "-updated_at")[:500]
        return Response([preference_out(p) for p in rows])

    @extend_schema(
        request=GlobalPreferenceIn,
        responses={202: PreferenceOut, **errors(*WRITE_ERRORS)},
        summary="Propose a preference for every project: in force once a reviewer approves it",
    )
    def post(self, request: Request) -> Response:
        require_proposer(request)
        data = valid(GlobalPreferenceIn, request.data)
        api_key = api_key_of(request)
        proposal = preferences.propose_global(
            user_ref=data["userId"],
            key=data["key"],
            value=data["value"],
            category=data.get("category"),
            actor=actor_for(request),
            proposed_in=api_key.project if api_key is not None else None,
        )
        return Response(preference_out(proposal), status=status.HTTP_202_ACCEPTED)


ID_PARAM = OpenApiParameter("preference_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class GlobalPreferenceApprove(APIView):
    @extend_schema(
        parameters=[ID_PARAM],
        request=None,
        responses={200: PreferenceOut, **errors(400, 403)},
        summary="Approve a proposed preference for every project (reviewers of global memories)",
    )
    def patch(self, request: Request, preference_id: int) -> Response:
        require_global_reader(request)
        _global_or_404(request, preference_id)
        approved = preferences.approve_global(preference_id=preference_id, actor=actor_for(request))
        return Response(preference_out(approved))


class GlobalPreferenceReject(APIView):
    @extend_schema(
        parameters=[ID_PARAM],
        request=None,
        responses={200: PreferenceOut, **errors(400, 403)},
        summary="Reject a proposed preference for every project (reviewers of global memories)",
    )
    def patch(self, request: Request, preference_id: int) -> Response:
        require_global_reader(request)
        _global_or_404(request, preference_id)
        rejected = preferences.reject_global(preference_id=preference_id, actor=actor_for(request))
        return Response(preference_out(rejected))
