from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Q

from gpuplatform.accounts.models import PlatformRole, User
from gpuplatform.errors import DomainError
from inventory.services import create_cluster


class Command(BaseCommand):
    help = "Register a cluster from a kubeconfig file (stored encrypted)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--kubeconfig", help="path to a kubeconfig file")
        parser.add_argument("--in-cluster", action="store_true", help="use the pod's service account")
        parser.add_argument("--pool-label", default="", help="node label that defines pools")
        parser.add_argument("--actor", default="", help="platform-admin recorded in the audit log")

    def handle(self, *args: Any, **options: Any) -> None:
        kubeconfig = ""
        if options["kubeconfig"]:
            try:
                kubeconfig = Path(options["kubeconfig"]).read_text()
            except OSError as exc:
                raise CommandError(f"cannot read {options['kubeconfig']}: {exc}") from exc
        actor = _actor(options["actor"])
        try:
            cluster = create_cluster(
                actor=actor,
                name=options["name"],
                kubeconfig=kubeconfig,
                in_cluster=options["in_cluster"],
                pool_label=options["pool_label"],
            )
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc}") from exc
        self.stdout.write(f"cluster {cluster.name} registered ({cluster.api_endpoint})")


def _actor(username: str) -> User:
    """The command runs with operator rights: a named platform-admin, else the first one."""
    users = User.objects.filter(is_active=True).filter(
        Q(platform_role=PlatformRole.PLATFORM_ADMIN) | Q(is_superuser=True)
    )
    actor = users.filter(username=username).first() if username else users.order_by("pk").first()
    if actor is None:
        raise CommandError("no platform-admin to act as: create one first (or pass --actor)")
    return actor
