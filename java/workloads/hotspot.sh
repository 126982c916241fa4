#!/bin/sh
# Wall time of a workload on HotSpot's locking modes: what a real JVM does
# with the program whose locking `objmon-bench replay` replays.
#   java/workloads/hotspot.sh NAME [REPS] [OUTDIR]
# Runs NAME (see run.sh) without the recorder, REPS times (default 3) per mode, and prints one
# line per mode: the median wall time and the range. It also writes every run's wall time to
# $TSV (default target/traces/hotspot-NAME.tsv, beside the traces), which `objmon-bench report`
# reads: one line per mode, tab-separated: workload, mode, JVM flags, the runs' wall times in
# seconds (space-separated; empty when skipped), note (why skipped; empty otherwise).
# Modes: JDK 25 with -XX:LockingMode=0/1/2 where it accepts the flag (monitors only / legacy
# stack-locking / lightweight), and JDK 17 with and without -XX:+UseBiasedLocking. A JDK that
# is missing, refuses a flag or fails the workload (e.g. a library built for a newer Java) is
# skipped with a note. The JDKs:
# $JDK25 (default /usr/lib/jvm/temurin-25-jdk-amd64), $JDK17 (default
# /usr/lib/jvm/java-17-openjdk-amd64).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=${1:?usage: hotspot.sh NAME [REPS] [OUTDIR]}
reps=${2:-3}
out=${3:-$root/target/workloads/hotspot}
mkdir -p "$out"
tsv=${TSV:-$root/target/traces/hotspot-$name.tsv}
mkdir -p "$(dirname "$tsv")"
printf '# workload\tmode\tflags\twall_s\tnote\n' >"$tsv.tmp"
row() { printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$1" "$2" "$3" "$4" >>"$tsv.tmp"; }
jdk25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
jdk17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) exit 1; m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f s [%.2f .. %.2f]", m, a[1], a[NR]}'; }
mode() {
    label=$1 jdk=$2 flags=$3
    if [ ! -x "$jdk/bin/java" ]; then
        echo "$name $label: skipped (no JDK at $jdk)"; row "$label" "$flags" "" "no JDK at $jdk"; return
    fi
    # shellcheck disable=SC2086
    if ! "$jdk/bin/java" $flags -version >/dev/null 2>&1; then
        echo "$name $label: skipped ($jdk refuses $flags)"; row "$label" "$flags" "" "$jdk refuses $flags"; return
    fi
    times=""
    i=0
    while [ "$i" -lt "$reps" ]; do
        if ! JDK25=$jdk NOAGENT=1 JAVA_OPTS="$flags" "$here/run.sh" "$name" "$out/$label" >/dev/null 2>"$out/$label.err"; then
            echo "$name $label: skipped (the workload failed on this JDK, see $out/$label.err)"
            row "$label" "$flags" "" "the workload failed on this JDK"; return
        fi
        t=$(sed -n 's/.*wall time without the recorder: \([0-9.]*\) s.*/\1/p' "$out/$label/$name.plain.log" | tail -1)
        times="$times $t"
        i=$((i + 1))
    done
    echo "$name $label: $(echo "$times" | tr ' ' '\n' | grep . | median) over $reps runs"
    row "$label" "$flags" "${times# }" ""
}
mode hotspot25-lm0 "$jdk25" "-XX:LockingMode=0"
mode hotspot25-lm1 "$jdk25" "-XX:LockingMode=1"
mode hotspot25-lm2 "$jdk25" "-XX:LockingMode=2"
mode hotspot17-default "$jdk17" ""
mode hotspot17-biased "$jdk17" "-XX:+UseBiasedLocking"
mv "$tsv.tmp" "$tsv"
echo "wrote $tsv"
