from django.apps import AppConfig


class UiConfig(AppConfig):
    name = "gpuplatform.ui"
    label = "ui"
    verbose_name = "Web UI shell"
