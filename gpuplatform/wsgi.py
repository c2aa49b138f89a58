"""The WSGI application, as gunicorn serves it.

Everything is imported before the first request (the URL configuration, and with it every view and
serializer), then frozen out of the garbage collector's reach: otherwise each full collection walks
Django's hundreds of thousands of long-lived objects, a pause of tens of milliseconds in the middle
of somebody's request. Forked workers share the frozen pages too.
"""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gpuplatform.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 - imports every view now, not in the first request
gc.collect()
gc.freeze()
