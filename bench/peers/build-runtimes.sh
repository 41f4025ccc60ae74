#!/usr/bin/env bash
# build-runtimes.sh: builds the peer drivers for the M:N runtimes of other
# languages into BUILD_DIR/bench/peers, each only when its toolchain is here:
#
#   peers-go     go/      Go goroutines, standard library only     (go)
#   peers-rust   rust/    tokio and rayon, Cargo.lock committed    (cargo)
#   peers-java   java/    virtual threads, needs JDK 21 or later   (javac)
#
#   bench/peers/build-runtimes.sh [BUILD_DIR]      (default build/release)
#
# Not part of the CMake build (ctest's bench.peers.smoke never builds or
# runs them): cargo may fetch crates from crates.io on its first build, and
# the CI needs nothing beyond scripts/install-deps. run.sh calls this script
# unless given --no-runtimes. A missing toolchain or a failed build prints
# one line on stderr and removes that driver's old binary (so a stale one is
# never timed); the others still build. Exit status 0 unless BUILD_DIR is
# wrong.
#
# The JDK: the first javac of major version 21 or later among $JAVA_HOME,
# PATH, /usr/lib/jvm/* and /opt/* (the highest such version wins); Java 17,
# often the system default, has no virtual threads. peers-java is a small
# script that starts that JDK's java on the compiled classes.
set -uo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$src/../../scripts/cli.sh"
cli_help_version build-runtimes.sh "$src/../.." "$0" "$@"
# What the drivers' --version prints (built in: they do not read weft.h).
weft_version=$(cli_weft_version "$src/../..")
build=${1:-build/release}
[[ -d $build ]] || { echo "build-runtimes.sh: no build directory $build" >&2; exit 2; }
out=$(cd "$build" && pwd)/bench/peers
mkdir -p "$out"
log=$out/build-runtimes.log
: >"$log"

skip() { # driver, reason
	rm -rf "${out:?}/$1" "${out:?}/$1.version"
	echo "build-runtimes.sh: $1 skipped: $2" >&2
}

# ---- Go
gobin=$(command -v go || true)
[[ -z $gobin && -x /usr/local/go/bin/go ]] && gobin=/usr/local/go/bin/go
if [[ -z $gobin ]]; then
	skip peers-go "no go toolchain (https://go.dev/dl)"
elif ! (cd "$src/go" && GOTOOLCHAIN=local GOFLAGS= "$gobin" build -trimpath \
	-ldflags "-X main.weftVersion=$weft_version" -o "$out/peers-go.new" .) >>"$log" 2>&1; then
	skip peers-go "go build failed (see $log)"
else
	mv "$out/peers-go.new" "$out/peers-go"
	GOTOOLCHAIN=local "$gobin" version | cut -d' ' -f3 >"$out/peers-go.version"
fi

# ---- Rust
cargo=$(command -v cargo || true)
[[ -z $cargo && -x $HOME/.cargo/bin/cargo ]] && cargo=$HOME/.cargo/bin/cargo
if [[ -z $cargo ]]; then
	skip peers-rust "no cargo (https://rustup.rs)"
elif ! WEFT_VERSION=$weft_version "$cargo" build --release --locked --quiet \
	--manifest-path "$src/rust/Cargo.toml" \
	--target-dir "$out/rust-target" >>"$log" 2>&1; then
	skip peers-rust "cargo build failed, offline or crates.io unreachable? (see $log)"
else
	cp "$out/rust-target/release/peers-rust" "$out/peers-rust"
	awk '/^name = "(tokio|rayon)"$/ { n = $3; getline; gsub(/"/, "", n); gsub(/"/, "", $3)
	     printf "%s%s %s", sep, n, $3; sep = ", " } END { print "" }' \
		"$src/rust/Cargo.lock" >"$out/peers-rust.version"
fi

# ---- Java: the newest JDK of major version >= 21
jdk_major() { # javac -> major version, or 0
	local v
	v=$("$1" -version 2>&1 | sed -n 's/^javac \([0-9]*\).*/\1/p' | head -1)
	echo "${v:-0}"
}
javac="" major=0
for c in ${JAVA_HOME:+"$JAVA_HOME/bin/javac"} $(command -v javac || true) \
	/usr/lib/jvm/*/bin/javac /opt/*/bin/javac /opt/*/*/bin/javac; do
	[[ -x $c ]] || continue
	m=$(jdk_major "$c")
	if ((m >= 21 && m > major)); then
		javac=$c major=$m
	fi
done
if [[ -z $javac ]]; then
	skip peers-java "no JDK 21 or later (virtual threads); looked in \$JAVA_HOME, PATH, /usr/lib/jvm, /opt"
elif ! "$javac" --release 21 -Xlint:all -Werror -d "$out/java-classes" "$src/java/Peers.java" \
	>>"$log" 2>&1; then
	skip peers-java "javac failed (see $log)"
else
	java=$(dirname "$javac")/java
	cat >"$out/peers-java" <<-EOS
		#!/bin/sh
		# Written by bench/peers/build-runtimes.sh: JDK $major ($java).
		exec '$java' -Dweft.version=$weft_version -cp '$out/java-classes' Peers "\$@"
	EOS
	chmod +x "$out/peers-java"
	"$java" -version 2>&1 | head -1 | sed 's/"//g' >"$out/peers-java.version"
fi
exit 0
