#!/usr/bin/env bash
# What the test suite drives for real besides Python, all Debian packages: Chromium (browser tests
# through Playwright), Prometheus (prometheus and promtool: scraping /metrics, rules, the metering
# backfill, the chart's alerts) and Node.js with npm (the OpenID Connect provider of the single sign-on
# tests, tests/oidc/); then the provider's npm packages from tests/oidc/package-lock.json.
# Debian packages are installed only when missing and when we are root; otherwise we say what is
# missing and fail.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# oidc-provider for the single sign-on tests: exactly the locked versions, once.
if [ ! -f tests/oidc/node_modules/.package-lock.json ] \
   || [ tests/oidc/package-lock.json -nt tests/oidc/node_modules/.package-lock.json ]; then
  echo "installing the test OIDC provider (npm ci in tests/oidc)"
  npm ci --prefix tests/oidc --no-audit --no-fund --loglevel=error
fi
