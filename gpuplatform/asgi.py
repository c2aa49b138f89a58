"""The ASGI application, as uvicorn serves it (docs/agents.md): every route through Django, except
the paths of settings.ASGI_BARE_APPS, each answered by its bare ASGI app: the agents' long poll
(policies/api/long_poll.py), which holds thousands of waiting agents as coroutines and answers them
without Django's middleware chain.

    uvicorn gpuplatform.asgi:application --host 0.0.0.0 --port 8000 --workers 2

Run it beside (or instead of) the WSGI server; a reverse proxy can send /api/v1/agents/bundle/ here.
"""

import gc
import os

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.urls import get_resolver
from django.utils.module_loading import import_string

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
django_application = get_asgi_application()
get_resolver().url_patterns  # noqa: B018 - imports every view now, not in the first request

# By dotted path from settings: the core names no domain app in an import (DESIGN §4).
BARE_APPS = {path: import_string(dotted) for path, dotted in settings.ASGI_BARE_APPS.items()}


async def application(scope, receive, send):
    bare_app = BARE_APPS.get(scope["path"]) if scope["type"] == "http" else None
    if bare_app is not None:
        await bare_app(scope, receive, send)
    else:
        await django_application(scope, receive, send)


gc.collect()
gc.freeze()
