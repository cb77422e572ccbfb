from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

admin.site.site_header = "Memory Layer"
admin.site.site_title = "Memory Layer admin"
admin.site.index_title = "Memories, projects, runs and history"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="admin:index", permanent=False)),
    path("admin/", admin.site.urls),
    path("api/", include("memories.api.urls")),
]
