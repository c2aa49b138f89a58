from django.apps import AppConfig


class DemoConfig(AppConfig):
    """`python manage.py demo`: a composition root of its own, so it may import every domain app."""

    name = "demo"
    verbose_name = "Demo"
