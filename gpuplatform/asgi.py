"""The ASGI application, as uvicorn serves it (docs/agents.md): every route through Django, except
the agents' long poll, answered by its bare ASGI adapter (policies/api/long_poll.py), which holds
thousands of waiting agents as coroutines and answers them without Django's middleware chain.

    uvicorn gpuplatform.asgi:application --host 0.0.0.0 --port 8000 --workers 2

Run it beside (or instead of) the WSGI server; a reverse proxy can send /api/v1/agents/bundle/ here.
"""

import gc
import os

from django.core.asgi import get_asgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
django_application = get_asgi_application()
get_resolver().url_patterns  # noqa: B018 - imports every view now, not in the first request

from policies.api.long_poll import PATH as BUNDLE_PATH  # noqa: E402  (after Django is set up)
from policies.api.long_poll import bundle_asgi  # noqa: E402


async def application(scope, receive, send):
    if scope["type"] == "http" and scope["path"] == BUNDLE_PATH:
        await bundle_asgi(scope, receive, send)
    else:
        await django_application(scope, receive, send)


gc.collect()
gc.freeze()
