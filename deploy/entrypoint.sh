#!/bin/sh
# The image's roles, one per command (deploy/Dockerfile, deploy/chart). Everything is configured by
# the environment (README: Configuration). GPUPLATFORM_ENTRYPOINT_PRINT=1 prints the command instead of
# running it: the test suite checks each role's command that way, and runs `web` and `poll` for real.
set -eu

role="${1:-web}"
[ "$#" -gt 0 ] && shift

run() {
  if [ "${GPUPLATFORM_ENTRYPOINT_PRINT:-0}" = "1" ]; then
    echo "$*"
    exit 0
  fi
  exec "$@"
}

case "$role" in
  web)
    # The UI and the API on WSGI threads. The agents' long poll is NOT served here (a held poll would be
    # a thread): under WSGI it answers at once; the `poll` role holds it (docs/agents.md).
    run gunicorn gpuplatform.wsgi \
      --bind "0.0.0.0:${PORT:-8000}" \
      --workers "${WEB_WORKERS:-3}" --threads "${WEB_THREADS:-8}" \
      --timeout "${WEB_TIMEOUT:-90}" --graceful-timeout 30 \
      --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-${TRUSTED_PROXIES:-127.0.0.1}}" \
      --access-logfile - "$@" ;;
  poll)
    # The agents' long poll (GET /api/v1/agents/bundle/, the ingress sends it here): an async server,
    # where a waiting agent is a coroutine, so its probes answer however many polls wait. Forwarded
    # headers are judged by the application's one rule for every route (gpuplatform/api/addresses.py),
    # so uvicorn does not rewrite the client's address itself.
    run uvicorn gpuplatform.asgi:application \
      --host 0.0.0.0 --port "${PORT:-8000}" \
      --workers "${POLL_WORKERS:-1}" \
      --no-proxy-headers --timeout-graceful-shutdown 30 "$@" ;;
  worker)
    # Prefork children write their metrics samples here (gpuplatform/observability/task_metrics.py): start empty.
    if [ -n "${PROMETHEUS_MULTIPROC_DIR:-}" ] && [ "${GPUPLATFORM_ENTRYPOINT_PRINT:-0}" != "1" ]; then
      rm -rf "$PROMETHEUS_MULTIPROC_DIR" && mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
    fi
    run celery -A gpuplatform worker --loglevel "${LOG_LEVEL:-INFO}" \
      --concurrency "${WORKER_CONCURRENCY:-4}" -Q "${CELERY_TASK_DEFAULT_QUEUE:-celery}" "$@" ;;
  beat)
    # The schedule lives in settings (CELERY_BEAT_SCHEDULE); its state file is scratch space.
    run celery -A gpuplatform beat --loglevel "${LOG_LEVEL:-INFO}" \
      --schedule "${BEAT_SCHEDULE_FILE:-/tmp/celerybeat-schedule}" "$@" ;;
  sync)
    # One process per cluster (the chart runs one Deployment each): `sync <cluster name>`.
    [ "$#" -ge 1 ] || { echo "usage: sync <cluster name> [sync_inventory options]" >&2; exit 64; }
    cluster="$1"; shift
    run python manage.py sync_inventory --cluster "$cluster" "$@" ;;
  migrate)
    run python manage.py migrate --noinput "$@" ;;
  agent)
    # The node agent (nodeagent/, plain Python): its console script from pyproject.toml.
    run gpuplatform-agent "$@" ;;
  manage)
    run python manage.py "$@" ;;
  *)
    run "$role" "$@" ;;
esac
