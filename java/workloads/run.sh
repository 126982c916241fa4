#!/bin/sh
# Records one workload's monitor trace: java/workloads/run.sh NAME OUTDIR
#   NAME: javac | h2 | lucene | xalan | antlr | all
# Writes OUTDIR/NAME.trace (FORMAT.md) and OUTDIR/NAME.log (stdout/stderr, recorder counters,
# wall time of the recorded run). Jars come from Maven Central through pom.xml (resolved once
# into target/workloads/lib); a workload whose jars cannot be resolved is skipped with a note.
# Characterize with: objmon-bench trace OUTDIR/*.trace
# NOAGENT=1 runs the same workload without the recorder (OUTDIR/NAME.plain.log, wall time);
# JAVA_OPTS adds JVM flags (e.g. -XX:LockingMode=1) to either run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
JDK=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
name=${1:?usage: run.sh NAME OUTDIR}
outdir=${2:?usage: run.sh NAME OUTDIR}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
if [ "$name" = all ]; then
    rc=0
    for w in javac h2 lucene xalan antlr; do "$0" "$w" "$outdir" || rc=1; done
    exit $rc
fi
work=$root/target/workloads
lib=$work/lib
if [ "$name" != javac ] && [ ! -f "$lib/.resolved" ]; then
    mkdir -p "$lib"
    if mvn -q -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$lib" >"$work/mvn.log" 2>&1; then
        touch "$lib/.resolved"
    else
        echo "note: Maven could not resolve the workloads' jars (see $work/mvn.log)" >&2
    fi
fi
case $name in
    javac) jars="" ;;
    h2) jars="h2-*.jar" ;;
    lucene) jars="lucene-core-*.jar lucene-analysis-common-*.jar" ;;
    xalan) jars="xalan-*.jar serializer-*.jar" ;;
    antlr) jars="antlr4-[0-9]*.jar antlr4-runtime-*.jar antlr-runtime-*.jar ST4-*.jar org.abego.treelayout.core-*.jar icu4j-*.jar" ;;
    *) echo "unknown workload $name" >&2; exit 2 ;;
esac
cp=""
for pat in $jars; do
    f=$(ls "$lib"/$pat 2>/dev/null | head -1 || true)
    if [ -z "$f" ]; then
        echo "note: workload $name skipped: $pat not resolved from Maven Central" | tee "$outdir/$name.log" >&2
        exit 0
    fi
    cp="$cp:$f"
done
classes=$work/$name/classes
rm -rf "$classes" && mkdir -p "$classes"
"$JDK/bin/javac" -nowarn -d "$classes" -cp "${cp#:}" "$here/$name/Main.java"
args=""
case $name in
    javac)
        src=$work/javac/src
        if [ ! -d "$src/java.base/java/util" ]; then
            mkdir -p "$src" && (cd "$src" && unzip -q -o "$JDK/lib/src.zip" 'java.base/java/util/*.java')
        fi
        rm -rf "$work/javac/out" && mkdir -p "$work/javac/out"
        args="$src $work/javac/out" ;;
    antlr) rm -rf "$work/antlr/gen"; args="$work/antlr/gen" ;;
esac
if [ -n "${NOAGENT:-}" ]; then
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$JDK/bin/java" ${JAVA_OPTS:-} -cp "$classes$cp" Main $args >"$outdir/$name.plain.log" 2>&1 || { echo "workload $name failed" >&2; exit 1; }
    end=$(date +%s.%N)
    echo "$name: wall time without the recorder: $(echo "$end - $start" | bc) s" | tee -a "$outdir/$name.plain.log"
    exit 0
fi
agent=$("$root/java/agent/build.sh")  # only for a recorded run: it needs JDK 25
start=$(date +%s.%N)
# shellcheck disable=SC2086
"$JDK/bin/java" ${JAVA_OPTS:-} -Dobjmon.agent.verbose=1 -javaagent:"$agent=out=$outdir/$name.trace" \
    -cp "$classes$cp" Main $args >"$outdir/$name.log" 2>&1 || { echo "workload $name failed (see $outdir/$name.log)" >&2; exit 1; }
end=$(date +%s.%N)
echo "recorded wall time: $(echo "$end - $start" | bc) s" >>"$outdir/$name.log"
grep -v '^objmon-agent: ' "$outdir/$name.log" | head -5
echo "$name: $(ls -l "$outdir/$name.trace" | awk '{print $5}') bytes in $outdir/$name.trace"
