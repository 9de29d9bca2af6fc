#!/usr/bin/env bash
# Installs the Debian packages the tests drive for real, when missing: redis-server (channel-layer tests),
# PostgreSQL's server (the web tests' PostgreSQL run; tests/pg.py starts a throw-away one) and Chromium (browser
# tests) with a CJK font. Java 17 and Maven come with the machine; tools/kafka/kafka.sh fetches Kafka itself.
set -euo pipefail
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
[ -x /usr/sbin/nginx ] || need+=(nginx)  # the failover tests put two Daphne processes behind one address
# Debian keeps initdb/pg_ctl off PATH, under /usr/lib/postgresql/<major>/bin. The package also creates the `postgres`
# user that tests/pg.py runs them as when the tests run as root. (Its own cluster is not used by the tests.)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
[ -x /usr/bin/chromium ] || need+=(chromium)
# CJK glyphs, so the Chinese pages render readable text in Chromium (screenshots, browser tests).
[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need+=(fonts-wqy-microhei)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${need[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
