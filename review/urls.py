from django.urls import path

from review import entities
from review.views import (
    actions,
    bulk,
    conflicts,
    dashboard,
    memories,
    preferences,
    preview,
    queue,
    ranking,
    runs,
)

app_name = "review"

project = "projects/<slug:slug>"
memory = "memories/<int:pk>"

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("queue/", queue.queue, name="queue"),
    path(f"{project}/queue/", queue.queue, name="project-queue"),
    path(f"{project}/memories/", memories.memory_list, name="memories"),
    path(f"{project}/preview/", preview.preview, name="preview"),
    path(f"{project}/runs/", runs.runs, name="runs"),
    path(f"{project}/runs/<int:pk>/", runs.run_detail, name="run"),
    path(f"{project}/ranking/", ranking.ranking, name="ranking"),
    path(
        f"{project}/ranking/<int:pk>/restore/",
        ranking.ranking_restore,
        name="ranking-restore",
    ),
    path(f"{project}/preferences/", preferences.project_preferences, name="preferences"),
    path("preferences/", preferences.global_preferences, name="global-preferences"),
    *(
        path(
            f"preferences/<int:pk>/{action}/",
            preferences.decide_global_preference,
            {"action": action},
            name=f"global-preference-{action}",
        )
        for action in ("approve", "reject")
    ),
    path("conflicts/", conflicts.conflicts, name="conflicts"),
    path(f"{project}/conflicts/", conflicts.conflicts, name="project-conflicts"),
    path("conflicts/<int:pk>/", conflicts.conflict_detail, name="conflict"),
    path("conflicts/<int:pk>/decide/", conflicts.conflict_action, name="conflict-decide"),
    path("conflicts/bulk/", conflicts.conflict_bulk, name="conflict-bulk"),
    path(f"{memory}/", memories.memory_detail, name="memory"),
    path(f"{memory}/row/", actions.memory_row, name="memory-row"),
    path(f"{memory}/edit/", actions.memory_edit, name="memory-edit"),
    path("memories/bulk/", actions.memory_bulk, name="memory-bulk"),
    path("undo/", actions.undo, name="undo"),
    # Bulk edits of every memory a list matches, as background jobs (review.views.bulk).
    path(
        f"{project}/memories/bulk-edit/",
        bulk.bulk_edit,
        {"source": "memories"},
        name="bulk-edit",
    ),
    path(
        f"{project}/queue/bulk-edit/",
        bulk.bulk_edit,
        {"source": "queue"},
        name="project-queue-bulk-edit",
    ),
    path("queue/bulk-edit/", bulk.bulk_edit, {"source": "queue"}, name="queue-bulk-edit"),
    path("jobs/<int:pk>/", bulk.bulk_job, name="bulk-job"),
    path("jobs/<int:pk>/undo/", bulk.bulk_job_undo, name="bulk-job-undo"),
    path("entities/<int:pk>/", entities.entity_detail, name="entity"),
    path("entities/<int:pk>/links/", entities.entity_link, name="entity-link"),
    *(
        path(f"{memory}/{action}/", actions.memory_action, {"action": action}, name=action)
        for action in actions.ACTIONS
    ),
]
