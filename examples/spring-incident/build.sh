#!/usr/bin/env bash
# Builds the incident's Spring Kafka service with Maven into target/ (git-ignored), once: `stamp` holds a checksum of
# pom.xml and the sources, and a build whose stamp matches is kept. Progress goes to stderr; the last line on stdout
# is the class path to run it with (run.sh does).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '[spring-incident/build.sh %(%T)T] %s\n' -1 "$*" >&2; }

stamp() { (cd "$HERE" && find pom.xml src -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -d' ' -f1); }
CLASSPATH_OUT="$HERE/target/spring-incident-1.jar:$HERE/target/lib/*"

if [[ -f "$HERE/target/stamp" && "$(cat "$HERE/target/stamp")" == "$(stamp)" && -f "$HERE/target/spring-incident-1.jar" ]]; then
    echo "$CLASSPATH_OUT"
    exit 0
fi
command -v mvn >/dev/null || { log "mvn not found: apt-get install maven (and a JDK 17)"; exit 1; }
log "building with Maven (the first time downloads spring-kafka and its jars) ..."
rc=0
out="$(cd "$HERE" && mvn -B -q -Dstyle.color=never package 2>&1)" || rc=$?
if ((rc != 0)); then
    printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^\s*$' | tail -n 20 >&2
    log "the build failed"
    exit 1
fi
stamp >"$HERE/target/stamp"
log "built: $(ls "$HERE/target/lib" | wc -l) jars in target/lib"
echo "$CLASSPATH_OUT"
