"""URL routes of the studio."""

from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import include, path

from studio import views

urlpatterns = [
    path("", views.home, name="home"),
    path("problems/new", views.problem_new, name="problem_new"),
    path("problems/validation/<str:job_id>", views.validation_status, name="validation_status"),
    path("problems/<int:pk>", views.problem_detail, name="problem"),
    path("problems/<int:pk>/runs", views.run_new, name="run_new"),
    path("runs/<int:pk>", views.run_detail, name="run"),
    path("runs/<int:pk>/cancel", views.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/versions.json", views.run_versions, name="run_versions"),
    path("runs/<int:pk>/trajectory.json", views.run_trajectory, name="run_trajectory"),
    path("versions/<int:pk>/package", views.version_package, name="version_package"),
    path("versions/<int:pk>/package/<str:filename>", views.version_package_file, name="version_package_file"),
    path("healthz", views.healthz, name="healthz"),
    path("accounts/", include("django.contrib.auth.urls")),
    # Before admin/: the admin's catch-all would otherwise swallow admin/rq/.
    path("admin/rq/", include("django_rq.urls")),
    path("admin/", admin.site.urls),
]
# daphne serves no static files itself; in production a front server or the image does (docker issue).
urlpatterns += staticfiles_urlpatterns()
