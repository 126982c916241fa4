#!/bin/sh
# The recorder's exactness test: builds the agent, records MonitorCounts (known counts of
# synchronized blocks, synchronized methods with exceptional exits, nesting, timed/notified/
# interrupted waits, notify, notifyAll, four contending threads) and checks the trace with an
# independent decoder. Exits non-zero on any mismatch.
# Usage: java/agent/test/run.sh [OUTDIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
JDK=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
jar=$("$here/../build.sh")
out=${1:-$root/target/objmon-agent/test}
mkdir -p "$out/classes"
"$JDK/bin/javac" --release 25 -d "$out/classes" "$here"/objmon/test/*.java
"$JDK/bin/java" -Dobjmon.agent.verbose=1 -javaagent:"$jar=out=$out/counts.trace" \
    -cp "$out/classes" objmon.test.MonitorCounts "$out/expected.txt"
ls -l "$out/counts.trace"
"$JDK/bin/java" -cp "$out/classes" objmon.test.CheckTrace "$out/counts.trace" "$out/expected.txt"
