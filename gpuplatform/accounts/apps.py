from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "gpuplatform.accounts"
    label = "accounts"
    verbose_name = "Accounts and API tokens"

    def ready(self) -> None:
        from gpuplatform.accounts import login_rate, signals  # noqa: F401  (connect their receivers)
