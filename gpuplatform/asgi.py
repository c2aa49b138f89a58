"""The ASGI application, as uvicorn serves it (docs/agents.md): every route, and in particular the
agents' long poll (policies/api/agents.py), which holds thousands of waiting agents as coroutines.

    uvicorn gpuplatform.asgi:application --host 0.0.0.0 --port 8000 --workers 2

Run it beside (or instead of) the WSGI server; a reverse proxy can send /api/v1/agents/bundle/ here.
"""

import gc
import os

from django.core.asgi import get_asgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
application = get_asgi_application()
get_resolver().url_patterns  # noqa: B018 - imports every view now, not in the first request
gc.collect()
gc.freeze()
