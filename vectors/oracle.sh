#!/usr/bin/env bash
# Reference oracle: Apache Kafka's own message classes (kafka-clients 4.3.1)
# produce and check wire vectors. See vectors/README.md.
#
#   vectors/oracle.sh generate <schemas-dir> <out-dir>
#   vectors/oracle.sh verify <dir>
#
# Builds vectors/oracle/ with Maven when needed (offline first, then online),
# then runs io.kafkars.oracle.Main with the given arguments. Works from any
# working directory; relative arguments are relative to the caller's cwd.
# Environment: MVN (default mvn), JAVA (default java), ORACLE_REBUILD=1 to
# force a rebuild.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
proj="$script_dir/oracle"
target="$proj/target"
stamp="$target/oracle-build.stamp"
cpfile="$target/classpath.txt"
mvn_cmd="${MVN:-mvn}"
java_cmd="${JAVA:-java}"

needs_build() {
  [[ "${ORACLE_REBUILD:-0}" == 1 ]] && return 0
  [[ -f "$stamp" && -f "$cpfile" && -d "$target/classes/io/kafkars/oracle" ]] || return 0
  [[ -n "$(find "$proj/pom.xml" "$proj/src" -newer "$stamp" -print -quit)" ]] && return 0
  local jar
  IFS=':' read -r -a jars < "$cpfile"
  for jar in "${jars[@]}"; do
    [[ -f "$jar" ]] || return 0
  done
  return 1
}

build() {
  mkdir -p "$target"
  local log="$target/oracle-build.log"
  local args=(-B -q -Dstyle.color=never -f "$proj/pom.xml" compile)
  if ! "$mvn_cmd" -o "${args[@]}" >"$log" 2>&1; then
    if ! "$mvn_cmd" "${args[@]}" >"$log" 2>&1; then
      echo "oracle.sh: Maven build failed; log follows ($log)" >&2
      sed -e 's/\x1b\[[0-9;]*m//g' "$log" >&2
      exit 1
    fi
  fi
  touch "$stamp"
}

if needs_build; then
  if command -v flock >/dev/null 2>&1; then
    mkdir -p "$target"
    exec 9>"$target/oracle-build.lock"
    flock 9
    if needs_build; then build; fi
    flock -u 9
    exec 9>&-
  else
    build
  fi
fi

exec "$java_cmd" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -cp "$target/classes:$(cat "$cpfile")" io.kafkars.oracle.Main "$@"
