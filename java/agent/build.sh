#!/bin/sh
# Builds the recorder: target/objmon-agent/objmon-agent.jar (JDK 25 javac/jar, no Maven).
# Usage: java/agent/build.sh   (prints the jar's path)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
JDK=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
out=$root/target/objmon-agent
rm -rf "$out/classes"
mkdir -p "$out/classes"
# -XDstringConcat=inline: no invokedynamic string concatenation inside the recorder (it would
# spin hidden classes from inside a transform).
"$JDK/bin/javac" -XDstringConcat=inline --release 25 -Xlint:all,-serial -Werror \
    -d "$out/classes" "$here"/src/objmon/agent/*.java
cat > "$out/MANIFEST.MF" <<MF
Premain-Class: objmon.agent.Agent
Can-Retransform-Classes: true
Can-Redefine-Classes: true
Boot-Class-Path: objmon-agent.jar
MF
"$JDK/bin/jar" --create --file "$out/objmon-agent.jar" --manifest "$out/MANIFEST.MF" -C "$out/classes" .
echo "$out/objmon-agent.jar"
