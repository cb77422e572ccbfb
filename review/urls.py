from django.urls import path

from review import entities, ranking, views

app_name = "review"

project = "projects/<slug:slug>"
memory = "memories/<int:pk>"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("queue/", views.queue, name="queue"),
    path(f"{project}/queue/", views.queue, name="project-queue"),
    path(f"{project}/memories/", views.memory_list, name="memories"),
    path(f"{project}/preview/", views.preview, name="preview"),
    path(f"{project}/runs/", views.runs, name="runs"),
    path(f"{project}/runs/<int:pk>/", views.run_detail, name="run"),
    path(f"{project}/ranking/", ranking.ranking, name="ranking"),
    path(
        f"{project}/ranking/<int:pk>/restore/",
        ranking.ranking_restore,
        name="ranking-restore",
    ),
    path("conflicts/", views.conflicts, name="conflicts"),
    path(f"{project}/conflicts/", views.conflicts, name="project-conflicts"),
    path("conflicts/<int:pk>/", views.conflict_detail, name="conflict"),
    path("conflicts/<int:pk>/decide/", views.conflict_action, name="conflict-decide"),
    path("conflicts/bulk/", views.conflict_bulk, name="conflict-bulk"),
    path(f"{memory}/", views.memory_detail, name="memory"),
    path(f"{memory}/row/", views.memory_row, name="memory-row"),
    path(f"{memory}/edit/", views.memory_edit, name="memory-edit"),
    path("memories/bulk/", views.memory_bulk, name="memory-bulk"),
    path("undo/", views.undo, name="undo"),
    path("entities/<int:pk>/", entities.entity_detail, name="entity"),
    path("entities/<int:pk>/links/", entities.entity_link, name="entity-link"),
    *(
        path(f"{memory}/{action}/", views.memory_action, {"action": action}, name=action)
        for action in views.ACTIONS
    ),
]
