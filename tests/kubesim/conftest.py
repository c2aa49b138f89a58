# The root conftest loads these for the whole suite; loading them here too lets
# `pytest -p no:django tests/kubesim` run on its own.
from tests.kubesim_fixtures import kube_api_client, kubesim, kubesim_factory  # noqa: F401
