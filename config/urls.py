"""Top-level URLs: the app, the login pages, the admin site for operators, the REST API."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from experiments.views.login import LoginView

urlpatterns = [
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("experiments.api.urls")),
    path("", include("experiments.urls")),
]
