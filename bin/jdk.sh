# Sourced by bin/test, bin/demo and .ci/run: selects a JDK 21 or newer for Maven and java.
# Order: $JAVA_HOME if it is 21+, then the `java` on PATH, then the newest JDK under /usr/lib/jvm.

sema_java_major() { # $1 = a java executable; prints its feature version, or nothing
  "$1" -XshowSettings:properties -version 2>&1 \
    | awk -F' = ' '/java.specification.version =/ { split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit }'
}

sema_select_jdk() {
  local candidate major best="" best_major=0
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    major=$(sema_java_major "$JAVA_HOME/bin/java")
    if [ "${major:-0}" -ge 21 ]; then return 0; fi
  fi
  if command -v java >/dev/null 2>&1; then
    candidate=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
    major=$(sema_java_major "$candidate/bin/java")
    if [ "${major:-0}" -ge 21 ] && [ -x "$candidate/bin/javac" ]; then
      export JAVA_HOME="$candidate"; return 0
    fi
  fi
  for candidate in /usr/lib/jvm/*/ /opt/java/*/ /usr/local/lib/jvm/*/; do
    candidate=${candidate%/}
    [ -x "$candidate/bin/java" ] && [ -x "$candidate/bin/javac" ] || continue
    major=$(sema_java_major "$candidate/bin/java")
    if [ "${major:-0}" -ge 21 ] && [ "$major" -gt "$best_major" ]; then
      best="$candidate"; best_major="$major"
    fi
  done
  if [ -n "$best" ]; then export JAVA_HOME="$best"; return 0; fi
  echo "error: Sema needs a JDK 21 or newer, and none was found (JAVA_HOME=${JAVA_HOME:-unset}," \
       "java on PATH: $(command -v java || echo none), nothing suitable under /usr/lib/jvm)." >&2
  echo "       Install one (e.g. 'apt-get install openjdk-21-jdk-headless') or set JAVA_HOME." >&2
  return 1
}

sema_select_jdk || exit 1
export PATH="$JAVA_HOME/bin:$PATH"
