"""The Kubernetes REST API over the store: routing, auth, verbs, content negotiation, faults.

Paths follow the real server:
  /api/v1/<plural>[/<name>[/<sub>]]                   cluster-scoped, or every namespace for lists
  /api/v1/namespaces/<ns>/<plural>[/<name>[/<sub>]]   namespaced
  /apis/<group>/<version>/...                         the same for named groups
Errors are Status objects; unknown paths are a bare 404 NotFound Status.
"""

from __future__ import annotations

import hmac
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from kubesim import admin, authn, conversion, discovery, errors, eviction, negotiation, openapi
from kubesim.errors import ApiError
from kubesim.faults import Faults
from kubesim.http_types import Request, Response, error_response, json_response
from kubesim.pagination import Paginator
from kubesim.registry import ResourceInfo
from kubesim.request_log import LoggedRequest, RequestLog
from kubesim.selectors import compile_matcher
from kubesim.store import Store
from kubesim.verbs import Verbs
from kubesim.watch_serving import DEFAULT_WATCH_TIMEOUT, error_event, serve_watch, too_old
from kubesim.watchers import Entry

log = logging.getLogger("kubesim")

_ANONYMOUS_PATHS = ("/version", "/healthz", "/livez", "/readyz")


@dataclass(slots=True)
class Route:
    info: ResourceInfo
    version: str
    namespace: str | None
    name: str | None
    subresource: str | None


class Api:
    def __init__(
        self,
        store: Store,
        faults: Faults,
        *,
        token: str,
        paginator: Paginator,
        bookmark_interval: float,
        server_address: str = "127.0.0.1:0",
    ) -> None:
        self.store = store
        self.faults = faults
        self.token = token
        self.paginator = paginator
        self.bookmark_interval = bookmark_interval
        self.server_address = server_address
        self.verbs = Verbs(store)
        self.request_log: RequestLog | None = None  # set by start(request_log=True)
        # Resources (plurals) this server does not serve, as an older release: a 404 on their paths
        # and absent from discovery (DeviceTaintRules before 1.37). Set by start(unserved=...).
        self.unserved: frozenset[str] = frozenset()
        self.users: dict[str, authn.UserInfo] = {}
        self._users_lock = threading.Lock()

    # ------------------------------------------------------------------------------------- entry

    def handle(self, req: Request) -> Response:
        try:
            return self._handle(req)
        except ApiError as err:
            return error_response(err)
        except Exception as exc:  # a bug in kubesim: answer like the server would, and log it
            log.exception("kubesim: %s %s failed", req.method, req.path)
            return error_response(errors.internal_error(str(exc)))

    def _authorized(self, req: Request) -> bool:
        auth = req.headers.get("authorization", "")
        scheme, _, credential = auth.partition(" ")
        if scheme.lower() != "bearer":
            return False
        if hmac.compare_digest(credential.strip(), self.token):
            req.user = authn.ADMIN
            return True
        with self._users_lock:
            req.user = self.users.get(credential.strip())
        return req.user is not None

    def add_user(self, token: str, user: authn.UserInfo) -> None:
        """Accept ``token`` as ``user`` (kubesim.authn: what the authenticator would make of it)."""
        with self._users_lock:
            self.users[token] = user

    def _handle(self, req: Request) -> Response:
        path = req.path.rstrip("/") or "/"
        anonymous = path in _ANONYMOUS_PATHS and "authorization" not in req.headers
        if not anonymous and not self._authorized(req):
            raise errors.unauthorized()
        if path in ("/healthz", "/livez", "/readyz"):
            return Response(200, b"ok", content_type="text/plain")
        if path.startswith("/kubesim"):
            return admin.handle(self, req, path)
        if path.startswith("/openapi/") and req.method == "GET":
            return self._openapi(req, path)
        parts = [p for p in path.split("/") if p]
        if req.method == "GET":
            doc = self._discovery(parts)
            if doc is not None:
                return json_response(doc)
        route = self._route(parts)
        if route is None:
            raise errors.resource_not_found_path(path)
        return self._dispatch(req, route)

    def _openapi(self, req: Request, path: str) -> Response:
        # The real server also serves these as protobuf; kubesim has JSON only, so a client asking for
        # protobuf alone (client-go's OpenAPISchema() for v2) gets the 406 a server lacking it answers.
        accept = req.headers.get("accept", "")
        if accept and not any(
            t.split(";")[0].strip() in ("application/json", "application/*", "*/*") for t in accept.split(",")
        ):
            raise errors.not_acceptable()
        if path == "/openapi/v2":
            return Response(200, openapi.v2())
        if path == "/openapi/v3":
            return Response(200, openapi.v3_index())
        body = openapi.v3_group_version(path.removeprefix("/openapi/v3/"))
        if body is None:
            raise errors.resource_not_found_path(path)
        return Response(200, body, {"Cache-Control": "public, immutable"} if "hash" in req.query else {})

    def _discovery(self, parts: list[str]) -> dict[str, Any] | None:
        if parts == ["version"]:
            return discovery.version()
        if parts == ["api"]:
            return discovery.api_versions(self.server_address)
        if parts == ["api", "v1"]:
            return discovery.resource_list("", "v1")
        custom = self.store.custom_resources()
        if parts == ["apis"]:
            return discovery.api_group_list(custom)
        if len(parts) == 2 and parts[0] == "apis":
            return discovery.api_group(parts[1], custom)
        if len(parts) == 3 and parts[0] == "apis":
            found = discovery.resource_list(parts[1], parts[2], custom)
            if found is not None and self.unserved:
                found["resources"] = [
                    r for r in found["resources"] if r["name"].split("/")[0] not in self.unserved
                ]
            return found
        return None

    def _route(self, parts: list[str]) -> Route | None:
        if len(parts) >= 3 and parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if not 1 <= len(rest) <= 3:
            return None
        info = self.store.for_path(group, version, rest[0])
        if info is None or info.plural in self.unserved or (namespace is not None and not info.namespaced):
            return None
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in info.subresources:
            return None
        if name is not None and info.namespaced and namespace is None:
            return None  # a namespaced object is only addressed inside its namespace
        return Route(info, version, namespace, name, sub)

    # ----------------------------------------------------------------------------------- dispatch

    def _dispatch(self, req: Request, route: Route) -> Response:
        method, info = req.method, route.info
        if route.name is None:
            if method == "GET":
                verb = "watch" if req.flag("watch") else "list"
            elif method == "POST":
                verb = "create"
            elif method == "DELETE":
                verb = "delete"
            else:
                raise errors.method_not_allowed()
        else:
            verb = {
                "GET": "get",
                "PUT": "update",
                "PATCH": "patch",
                "DELETE": "delete",
                "POST": "create",
            }.get(method, "")
            if not verb or (method == "POST" and route.subresource not in ("binding", "eviction")):
                raise errors.method_not_allowed()
            if route.subresource in ("binding", "eviction") and method != "POST":
                raise errors.method_not_allowed()
        if self.request_log is not None:
            self.request_log.record(
                LoggedRequest(
                    verb,
                    info.group,
                    info.plural,
                    route.subresource or "",
                    route.namespace or "",
                    route.name or "",
                )
            )
        self._inject(verb, info.plural, req)
        if verb == "watch":
            return self._watch(req, route)
        if verb == "list":
            return self._list(req, route)
        if route.subresource == "binding":
            return self.verbs.bind(req, route.namespace or "", route.name or "", route.version)
        if route.subresource == "eviction":
            return eviction.evict(self.store, req, route.namespace or "", route.name or "")
        if verb == "create":
            return self.verbs.create(req, info, route.version, route.namespace)
        if verb == "get":
            return self._get_response(req, route)
        if verb == "update":
            return self.verbs.update(
                req, info, route.version, route.namespace, route.name or "", route.subresource
            )
        if verb == "patch":
            return self.verbs.patch(
                req, info, route.version, route.namespace, route.name or "", route.subresource
            )
        if route.name is None:
            return self.verbs.delete_collection(req, info, route.version, route.namespace)
        return self.verbs.delete(req, info, route.version, route.namespace, route.name)

    def _inject(self, verb: str, resource: str, req: Request) -> None:
        for fault in self.faults.fire(verb, resource, ("latency", "error", "throttle")):
            if fault.kind == "latency":
                time.sleep(fault.seconds)
            elif fault.kind == "throttle":
                raise errors.too_many_requests(fault.retry_after)
            elif fault.status == 503:
                raise errors.service_unavailable()
            else:
                raise ApiError(
                    fault.status,
                    "InternalError",
                    "Internal error occurred: injected fault",
                    [{"message": "injected fault"}],
                )

    def _get_response(self, req: Request, route: Route) -> Response:
        accept = req.headers.get("accept", "")
        form = negotiation.negotiate(accept, listing=False)
        response = self.render(self._get(route), route.info, route.version)
        return self._negotiated(form, response, req, None)

    @staticmethod
    def _negotiated(
        form: str, response: Response, req: Request, list_meta: dict[str, Any] | None
    ) -> Response:
        if form == negotiation.JSON:
            return response
        if form == negotiation.YAML:
            return Response(
                response.status,
                negotiation.to_yaml(response.body),
                response.headers,
                None,
                "application/yaml",
            )
        parsed = json.loads(response.body)
        objects = parsed["items"] if list_meta is not None else [parsed]
        body, ctype = negotiation.transform(
            form,
            objects,
            list_meta,
            req.headers.get("accept", ""),
            req.query.get("includeObject", "Metadata"),
        )
        return Response(response.status, body, response.headers, None, ctype)

    def _get(self, route: Route) -> Entry:
        entry = self.store.get_entry(route.info.plural, route.namespace, route.name or "")
        if entry is None:
            raise errors.not_found(route.info, route.name or "")
        return entry

    def render(
        self,
        entry: Entry,
        info: ResourceInfo,
        version: str,
        status: int = 200,
        warnings: list[str] | None = None,
    ) -> Response:
        headers = {"Warning": ", ".join(f'299 - "{w}"' for w in warnings)} if warnings else {}
        return Response(status, self.raw(entry, info, version), headers)

    @staticmethod
    def raw(entry: Entry, info: ResourceInfo, version: str) -> bytes:
        if version == info.version:
            return entry.raw
        return json.dumps(conversion.from_storage(info, entry.obj, version), separators=(",", ":")).encode()

    # -------------------------------------------------------------------------------------- reads

    def _wait_for_rv(self, requested: str | None) -> None:
        """A resourceVersion newer than the store's: wait briefly, then 504 like the real server."""
        if not requested or requested == "0":
            return
        try:
            wanted = int(requested)
        except ValueError as exc:
            raise errors.bad_request(f"invalid resource version: {requested}") from exc
        deadline = time.monotonic() + 3.0
        while self.store.resource_version < wanted:
            if time.monotonic() > deadline:
                raise ApiError(
                    504,
                    "Timeout",
                    f"Too large resource version: {wanted}, current: {self.store.resource_version}",
                    [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                    retry_after=1,
                )
            time.sleep(0.01)

    def _list(self, req: Request, route: Route) -> Response:
        info, q = route.info, req.query
        form = negotiation.negotiate(req.headers.get("accept", ""), listing=True)
        limit = int(q.get("limit") or 0)
        scope = "|".join(
            (info.plural, route.namespace or "", q.get("labelSelector", ""), q.get("fieldSelector", ""))
        )
        token = q.get("continue")
        if token:
            if self.faults.fire("list", info.plural, ("expire_continue",)):
                raise errors.gone(errors.CONTINUE_EXPIRED)
            page = self.paginator.next_page(token, scope, limit)
        else:
            exact = self._list_version_match(info, q)
            self._wait_for_rv(q.get("resourceVersion"))
            matcher = compile_matcher(q.get("labelSelector"), q.get("fieldSelector"), info.plural)
            entries, rv = self.store.list_entries(info.plural, route.namespace, matcher)
            if exact is not None:
                rv = self._exact(info, exact, rv)
            page = self.paginator.first_page(entries, rv, scope, limit)
        meta: dict[str, Any] = {"resourceVersion": str(page.rv)}
        if page.continue_token:
            meta["continue"] = page.continue_token
            if not q.get("labelSelector") and not q.get("fieldSelector"):
                meta["remainingItemCount"] = page.remaining
        api_version = info.api_version_for(route.version)
        head = json.dumps(
            {"kind": f"{info.kind}List", "apiVersion": api_version, "metadata": meta}, separators=(",", ":")
        ).encode()
        items = b",".join(self.raw(e, info, route.version) for e in page.entries)
        response = Response(200, head[:-1] + b',"items":[' + items + b"]}")
        return self._negotiated(form, response, req, meta)

    @staticmethod
    def _list_options_invalid(field: str, message: str) -> ApiError:
        return ApiError(
            422,
            "Invalid",
            f'ListOptions.meta.k8s.io "" is invalid: {field}: {message}',
            [errors.field_cause("FieldValueForbidden", field, message)],
            group="meta.k8s.io",
            kind="ListOptions",
        )

    def _list_version_match(self, info: ResourceInfo, q: dict[str, str]) -> int | None:
        """ValidateListOptions' resourceVersionMatch rules; the rv to match exactly, if Exact."""
        match, rv = q.get("resourceVersionMatch", ""), q.get("resourceVersion", "")
        if not match:
            return None
        if match not in ("Exact", "NotOlderThan"):
            raise self._list_options_invalid(
                "resourceVersionMatch",
                f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"',
            )
        if not rv:
            raise self._list_options_invalid(
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            )
        if match == "Exact" and rv == "0":
            raise self._list_options_invalid(
                "resourceVersionMatch",
                'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
            )
        if match == "Exact" and not rv.isdigit():
            raise errors.bad_request(f"invalid resource version: {rv}")
        return int(rv) if match == "Exact" else None

    def _exact(self, info: ResourceInfo, wanted: int, current: int) -> int:
        """An Exact list: kubesim keeps no snapshots, so it serves one only where the resource is
        unchanged since `wanted` (the current objects are then that revision's); otherwise 410, as a real
        server answers for a revision etcd has compacted."""
        if wanted == current or (
            wanted >= self.store.oldest_watchable(info.plural)
            and self.store.last_change(info.plural) <= wanted
        ):
            return wanted
        raise ApiError(
            410,
            "Expired",
            f"The resourceVersion for the provided list is too old: {wanted} "
            "(kubesim serves no older revisions)",
            [{"reason": "Expired", "message": "the resourceVersion is no longer served"}],
        )

    def _watch(self, req: Request, route: Route) -> Response:
        info, q = route.info, req.query
        negotiation.negotiate(req.headers.get("accept", ""), listing=True, watch=True)
        if req.flag("sendInitialEvents"):
            # WatchList (KEP-3157) is not served; without its match parameter a real server refuses
            # sendInitialEvents, and kubesim refuses it either way, so clients fall back to list+watch.
            if q.get("resourceVersionMatch") != "NotOlderThan":
                raise self._list_options_invalid(
                    "sendInitialEvents",
                    "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch "
                    'is set to "NotOlderThan"',
                )
            raise self._list_options_invalid(
                "sendInitialEvents",
                "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate "
                "is enabled",
            )
        rv_param = q.get("resourceVersion", "")
        since = None if rv_param in ("", "0") else int(rv_param) if rv_param.isdigit() else None
        if rv_param and rv_param != "0" and since is None:
            raise errors.bad_request(f"invalid resource version: {rv_param}")
        if since is not None:
            self._wait_for_rv(rv_param)
        if self.faults.fire("watch", info.plural, ("expire_watch",)):
            body = error_event(errors.too_old_resource_version(since or 0, self.store.resource_version))
            return Response(200, headers={}, stream=iter([body]))
        matcher = compile_matcher(q.get("labelSelector"), q.get("fieldSelector"), info.plural)
        convert = None if route.version == info.version else (lambda e: self.raw(e, info, route.version))
        try:
            stream = self.store.watch(info.plural, route.namespace, since, matcher, convert)
        except ApiError as err:
            if err.status == 410 and since is not None:
                return Response(200, stream=iter([too_old(since, self.store, info.plural)]))
            raise
        cut = self.faults.fire("watch", info.plural, ("cut_watch",))
        timeout = float(q.get("timeoutSeconds") or DEFAULT_WATCH_TIMEOUT)
        chunks = serve_watch(
            self.store,
            info,
            route.version,
            stream,
            timeout=timeout,
            bookmarks=req.flag("allowWatchBookmarks"),
            bookmark_interval=self.bookmark_interval,
            cut_after=cut[0].after_events if cut else None,
            client_gone=req.client_gone,
        )
        return Response(200, stream=chunks)


def parse_target(target: str) -> tuple[str, dict[str, str]]:
    split = urlsplit(target)
    return split.path, dict(parse_qsl(split.query, keep_blank_values=True))
