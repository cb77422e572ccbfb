from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView

admin.site.site_header = "Memory Layer"
admin.site.site_title = "Memory Layer admin"
admin.site.index_title = "Memories, projects, runs and history"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="review:dashboard", permanent=False)),
    path("review/", include("memories.review.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("memories.api.urls")),
]
