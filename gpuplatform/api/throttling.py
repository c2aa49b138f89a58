"""Rate limits per API token (per user for sessions, per address for anonymous callers), and per user
across all of that user's tokens and sessions.

Both keep DRF's ``SimpleRateThrottle`` rule: a request passes when fewer than N requests passed in the
last period, and only passed requests count. DRF keeps each log as one pickled list in the cache, read
and written whole on every request (thousands of timestamps near the limit, twice a request); with
the Redis cache the log is a sorted set trimmed, counted and appended by one script in one round trip,
atomically, so concurrent requests no longer overwrite each other's entries. Other caches (the demo's
in-memory one) keep DRF's list.
"""

from __future__ import annotations

import secrets
from typing import Any

import redis
from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from gpuplatform.accounts.models import ApiToken
from gpuplatform.api.addresses import client_address

# KEYS[1]: the log. ARGV: now, the oldest time still in the window's past (entries at or before it go,
# as DRF drops them), the limit, the period, a member unique to this request. Answers {1} when the
# request passes (and logs it); {0, count, oldest} when it does not (and logs nothing): what
# ``wait`` needs. Times travel as strings, so no digit is lost to Lua's number formatting.
SLIDING_LOG = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, count, oldest[2] or ''}
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[5])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {1}
"""

_script: Any = None  # redis.commands.core.Script, made on first use: one per process, its own pool


def _sliding_log() -> Any:
    """The script bound to the cache's Redis, or None when the cache is not Redis."""
    global _script
    if _script is None:
        default = settings.CACHES["default"]
        if default["BACKEND"] != "django.core.cache.backends.redis.RedisCache":
            return None
        location = default["LOCATION"]
        # Django writes to the first of several servers; so does this.
        url = location[0] if isinstance(location, list | tuple) else location.split(",")[0]
        _script = redis.Redis.from_url(url).register_script(SLIDING_LOG)
    return _script


class SlidingLogThrottle(SimpleRateThrottle):
    # Not DRF's key: a list pickled there by the code before would be the wrong type for a sorted set.
    cache_format = "throttle-log_%(scope)s_%(ident)s"

    def allow_request(self, request: Request, view: Any) -> bool:
        script = _sliding_log()
        if script is None:
            return super().allow_request(request, view)
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        limit, period = self.parse_rate(self.rate)
        assert limit is not None and period is not None  # the rate is set
        self.now = self.timer()
        answer = script(
            keys=[self.cache.make_and_validate_key(self.key)],
            args=[
                repr(self.now),
                repr(self.now - period),
                limit,
                period,
                f"{self.now!r}-{secrets.token_hex(6)}",
            ],
        )
        if answer[0]:
            return True
        # DRF's wait() reads only the log's length and its oldest entry.
        self.history = [float(answer[2])] * int(answer[1]) if answer[2] else []
        return False


class TokenRateThrottle(SlidingLogThrottle):
    scope = "token"

    def get_ident(self, request: Request) -> str:
        # DRF's own reading believes any X-Forwarded-For when NUM_PROXIES is unset.
        return client_address(request)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if isinstance(request.auth, ApiToken):
            ident = f"token:{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"addr:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class UserRateThrottle(SlidingLogThrottle):
    scope = "user"

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        if request.user and request.user.is_authenticated:
            return self.cache_format % {"scope": self.scope, "ident": f"user:{request.user.pk}"}
        return None  # anonymous callers are limited per address (TokenRateThrottle, AddressGuardMiddleware)
