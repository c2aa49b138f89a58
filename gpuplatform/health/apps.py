from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "gpuplatform.health"
    label = "health"
    verbose_name = "Health"

    def ready(self) -> None:
        from gpuplatform.health.attention import stale_loops_attention
        from gpuplatform.ui.attention import register_attention

        register_attention(name="health", source=stale_loops_attention)
