from django.urls import path, re_path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api import changes, conflicts, conversations, entities, preferences, runs, views
from api.context import ContextView
from api.errors import api_not_found


class IdConverter:
    """A database id: 1 to 18 digits (never overflows a bigint)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")

app_name = "api"
project = "projects/<slug:project>"
memory = f"{project}/memories/<id:memory_id>"
user = f"{project}/users/<str:user>"
conversation = f"{project}/conversations/<id:conversation_id>"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    path("projects/", views.ProjectList.as_view(), name="projects"),
    path(project, views.ProjectDetail.as_view(), name="project"),
    path(f"{project}/memories", views.MemoryListCreate.as_view(), name="memories"),
    path(memory, views.MemoryDetail.as_view(), name="memory"),
    path(f"{memory}/approve", views.MemoryApprove.as_view(), name="memory-approve"),
    path(f"{memory}/reject", views.MemoryReject.as_view(), name="memory-reject"),
    path(f"{memory}/history", views.MemoryHistory.as_view(), name="memory-history"),
    path(f"{memory}/flag", views.MemoryFlag.as_view(), name="memory-flag"),
    path(f"{memory}/restore", views.MemoryRestore.as_view(), name="memory-restore"),
    path(
        f"{memory}/restore-content",
        views.MemoryRestoreContent.as_view(),
        name="memory-restore-content",
    ),
    path(f"{memory}/supersede", conflicts.MemorySupersede.as_view(), name="memory-supersede"),
    path(f"{project}/conflicts", conflicts.ConflictList.as_view(), name="conflicts"),
    path(
        f"{project}/conflicts/<id:conflict_id>",
        conflicts.ConflictDetail.as_view(),
        name="conflict",
    ),
    path(
        f"{project}/conflicts/<id:conflict_id>/resolve",
        conflicts.ConflictResolve.as_view(),
        name="conflict-resolve",
    ),
    path(f"{project}/changes", changes.ProjectChanges.as_view(), name="changes"),
    path(f"{project}/entities", entities.EntityList.as_view(), name="entities"),
    path(f"{project}/entities/<id:entity_id>", entities.EntityDetail.as_view(), name="entity"),
    path(f"{project}/runs", runs.RunCreate.as_view(), name="runs"),
    path(f"{project}/runs/<id:run_id>", runs.RunDetail.as_view(), name="run"),
    path(f"{project}/runs/<id:run_id>/outcome", runs.RunOutcome.as_view(), name="run-outcome"),
    # Conversations: saved, appended to, read, listed or searched, distilled for review.
    path(
        f"{project}/conversations",
        conversations.ConversationListCreate.as_view(),
        name="conversations",
    ),
    path(conversation, conversations.ConversationDetail.as_view(), name="conversation"),
    path(
        f"{conversation}/messages",
        conversations.ConversationMessages.as_view(),
        name="conversation-messages",
    ),
    path(
        f"{conversation}/distill",
        conversations.ConversationDistill.as_view(),
        name="conversation-distill",
    ),
    path(f"{project}/export", views.ProjectExport.as_view(), name="export"),
    path(f"{project}/context", ContextView.as_view(), name="context"),
    path("memories/global", views.GlobalMemories.as_view(), name="global-memories"),
    path(
        "memories/global/<id:memory_id>",
        views.GlobalMemoryDetail.as_view(),
        name="global-memory",
    ),
    path(
        "memories/global/<id:memory_id>/approve",
        views.GlobalMemoryApprove.as_view(),
        name="global-memory-approve",
    ),
    path(
        "memories/global/<id:memory_id>/reject",
        views.GlobalMemoryReject.as_view(),
        name="global-memory-reject",
    ),
    # Users' preferences, and all of a user's data in a project.
    path(f"{user}", preferences.UserData.as_view(), name="user-data"),
    path(f"{user}/preferences", preferences.PreferenceList.as_view(), name="preferences"),
    path(
        f"{user}/preferences/<str:key>", preferences.PreferenceDetail.as_view(), name="preference"
    ),
    path(
        f"{user}/preferences/<str:key>/history",
        preferences.PreferenceHistory.as_view(),
        name="preference-history",
    ),
    path("preferences/global", preferences.GlobalPreferences.as_view(), name="global-preferences"),
    path(
        "preferences/global/<id:preference_id>/approve",
        preferences.GlobalPreferenceApprove.as_view(),
        name="global-preference-approve",
    ),
    path(
        "preferences/global/<id:preference_id>/reject",
        preferences.GlobalPreferenceReject.as_view(),
        name="global-preference-reject",
    ),
    re_path(r"^[\s\S]*$", api_not_found),  # any other path, new lines included
]
