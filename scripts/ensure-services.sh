#!/usr/bin/env bash
# PostgreSQL and Redis must answer on 127.0.0.1 for the tests. Start them when we can (root, local
# Debian installs), and fail with a clear message when we cannot.
set -euo pipefail
pg_ok() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_ok() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! pg_ok && [ "$(id -u)" -eq 0 ] && command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  for _ in $(seq 1 30); do pg_ok && break; sleep 1; done
fi
if ! redis_ok && [ "$(id -u)" -eq 0 ] && command -v redis-server >/dev/null 2>&1; then
  echo "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
  for _ in $(seq 1 30); do redis_ok && break; sleep 1; done
fi
pg_ok || { echo "PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
redis_ok || { echo "Redis is not reachable on 127.0.0.1:6379" >&2; exit 1; }
echo "PostgreSQL and Redis are reachable"
