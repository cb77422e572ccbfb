from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

from mcp_http.views import McpEndpoint
from ops import views as ops_views

admin.site.site_header = "Memory Layer"
admin.site.site_title = "Memory Layer admin"
admin.site.index_title = "Memories, projects, runs and history"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="review:dashboard", permanent=False)),
    path("review/", include("review.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    path("mcp", McpEndpoint.as_view(), name="mcp"),
    path("healthz", ops_views.healthz, name="healthz"),
    path("readyz", ops_views.readyz, name="readyz"),
    path("metrics", ops_views.metrics_view, name="metrics"),
]

# A 500, or a 503 with Retry-After while the database is unreachable; a 400 (or 413) and a
# 404: each in the error shape under /api/ and /mcp.
handler500 = "ops.views.server_error"
handler400 = "ops.views.bad_request"
handler404 = "ops.views.not_found"
