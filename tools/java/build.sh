#!/usr/bin/env bash
# Builds the Java worker of the real-cluster backend (playground/kafka/java/*.java), one build per kafka-clients
# release, into tools/java/.build/<release>/ (git-ignored):
#
#   bash tools/java/build.sh 3.9.1      lib/ (kafka-clients 3.9.1 + its run-time jars + slf4j-jdk14), classes/,
#                                       worker.jar, worker.jsa (class-data sharing archive), stamp
#   bash tools/java/build.sh --all      every release named in playground/engine/spec.py KAFKA_RELEASES
#   bash tools/java/build.sh --check R  exit 0 iff the build of R is present and matches the sources
#
# Maven fetches the jars once (tools/java/pom.xml: copy-dependencies only, like tools/kafka/pom.xml); javac
# compiles the worker again whenever its sources change: `stamp` holds the release and a checksum of the sources,
# and playground/kafka/java_worker.py computes the same checksum to decide whether to run this script before it
# starts a worker. So `make run`, `make test` and a bare pytest all build what is missing; nothing is installed by
# hand. Progress goes to stderr; the last line on stdout is the classpath.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SRC_DIR="$ROOT/playground/kafka/java"
BUILD_ROOT="${JAVA_WORKER_BUILD_DIR:-$HERE/.build}"

log() { printf '[java/build.sh %(%T)T] %s\n' -1 "$*" >&2; }
die() { printf '[java/build.sh %(%T)T] ERROR: %s\n' -1 "$*" >&2; exit 1; }

sources() { find "$SRC_DIR" -maxdepth 1 -name '*.java' | LC_ALL=C sort; }

# "<release> <sha256 of the sources' bytes, concatenated in path order>"; java_worker.py's stamp_for() is the same
stamp_for() { printf '%s %s\n' "$1" "$(sources | xargs cat | sha256sum | cut -d' ' -f1)"; }

releases() {
    local py="$ROOT/.venv/bin/python"
    [[ -x "$py" ]] || py="$(command -v python3)"
    (cd "$ROOT" && "$py" -c 'from playground.engine.spec import KAFKA_RELEASES; print(*sorted(set(KAFKA_RELEASES.values())))')
}

is_current() { # release
    local dir="$BUILD_ROOT/$1"
    [[ -f "$dir/stamp" && -f "$dir/lib/.complete" && -f "$dir/worker.jar" ]] \
        && [[ "$(cat "$dir/stamp")" == "$(stamp_for "$1")" ]]
}

# The worker's class path: a jar, not the classes directory (class-data sharing refuses a non-empty directory on
# the class path). playground/kafka/java_worker.py starts every worker with exactly this string.
classpath_of() { echo "$1/worker.jar:$1/lib/*"; }

# Class-data sharing: a training run (Worker --train, no broker needed) writes worker.jsa, a dynamic archive of the
# classes a worker loads; every worker JVM then maps it instead of loading and verifying them (start-up CPU about
# halved: 1.4 s -> 0.8 s per actor here). Optional: without the archive (a JDK that cannot write one, a failed
# run) the workers start as before; with an archive of another JDK, -Xshare:auto ignores it.
train_archive() { # dir
    local dir=$1 tmp="$1/worker.jsa.tmp.$$"
    rm -f "$dir/worker.jsa" "$tmp"
    if java -XX:ArchiveClassesAtExit="$tmp" -Xlog:disable -Xlog:all=error:stderr -XX:+UseSerialGC \
        -XX:TieredStopAtLevel=1 -cp "$(classpath_of "$dir")" Worker --train </dev/null >/dev/null 2>"$dir/train.log" \
        && [[ -s "$tmp" ]]; then
        mv "$tmp" "$dir/worker.jsa"
        log "class-data sharing archive: $dir/worker.jsa"
    else
        rm -f "$tmp"
        log "no class-data sharing archive (see $dir/train.log); the workers start without one"
    fi
}

fetch_jars() { # release dir
    local release=$1 dir=$2 out rc=0 tmp="$2/lib.tmp.$$"
    [[ -f "$dir/lib/.complete" ]] && return 0
    command -v mvn >/dev/null || die "mvn not found (needed once, to download kafka-clients $release)"
    log "fetching kafka-clients $release with Maven ..."
    rm -rf "$tmp"
    out="$(mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" -Dkafka.version="$release" -Djars.dir="$tmp" package 2>&1)" || rc=$?
    if ((rc != 0)); then
        printf '%s\n' "$out" | sed 's/\x1b\[[0-9;]*m//g' | grep -v '^\s*$' | tail -n 15 >&2
        rm -rf "$tmp"
        die "Maven could not resolve kafka-clients $release"
    fi
    compgen -G "$tmp/kafka-clients-$release.jar" >/dev/null || die "kafka-clients-$release.jar missing after the fetch"
    echo "kafka-clients $release" >"$tmp/.complete"
    rm -rf "$dir/lib"
    mv "$tmp" "$dir/lib"
    log "$(ls "$dir/lib"/*.jar | wc -l) jars in $dir/lib"
}

build() { # release
    local release=$1 dir="$BUILD_ROOT/$1"
    [[ "$release" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "not a release: '$release'"
    mkdir -p "$dir"
    # one build at a time per release: several backends (or test workers) may ask at once
    exec 9>"$dir/.lock"
    flock 9
    if is_current "$release"; then
        classpath_of "$dir"
        return 0
    fi
    command -v javac >/dev/null || die "javac not found (a JDK 17 is needed to compile the Java worker)"
    fetch_jars "$release" "$dir"
    local tmp="$dir/classes.tmp.$$"
    rm -rf "$tmp" && mkdir -p "$tmp"
    log "compiling the Java worker against kafka-clients $release ..."
    # shellcheck disable=SC2046
    javac --release 17 -nowarn -encoding UTF-8 -cp "$dir/lib/*" -d "$tmp" $(sources) >&2 \
        || { rm -rf "$tmp"; die "javac failed"; }
    rm -rf "$dir/classes"
    mv "$tmp" "$dir/classes"
    jar cf "$dir/worker.jar.tmp.$$" -C "$dir/classes" . || { rm -f "$dir/worker.jar.tmp.$$"; die "jar failed"; }
    mv "$dir/worker.jar.tmp.$$" "$dir/worker.jar"
    train_archive "$dir"
    stamp_for "$release" >"$dir/stamp"
    exec 9>&-
    log "built $dir"
    classpath_of "$dir"
}

case "${1:-}" in
    --all) for r in $(releases); do build "$r"; done ;;
    --check) [[ -n "${2:-}" ]] || die "usage: build.sh --check RELEASE"; is_current "$2" ;;
    "" | -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) build "$1" ;;
esac
