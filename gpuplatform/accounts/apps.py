from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "gpuplatform.accounts"
    label = "accounts"
    verbose_name = "Accounts and API tokens"

    def ready(self) -> None:
        from gpuplatform.accounts import signals  # noqa: F401  (connects the login audit receivers)
