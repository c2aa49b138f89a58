"""The API router. Domain apps register their viewsets here, from the composition root only."""

from rest_framework.routers import DefaultRouter


class ApiRouter(DefaultRouter):
    include_root_view = True
    trailing_slash = "/"
