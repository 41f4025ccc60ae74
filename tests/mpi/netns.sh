#!/bin/sh
# Two simulated hosts on this machine: two network namespaces joined by a
# veth pair, each with its own host name (a UTS namespace), and Open MPI
# running across them over TCP, launched by netns-launch.sh (Open MPI's
# rsh agent) instead of ssh. Used by the ctest mpi.netns.* (tests/mpi/CMakeLists.txt)
# and by the recipe in docs/mpi.md.
#
#   netns.sh <mpiexec> <program> [args...]
#
# runs `mpiexec --hostfile <the two hosts> <flags> [args...]` from inside
# the first namespace, where <flags> are what a cluster run needs: the rsh
# agent, TCP only (tcp,self: no shared memory between the hosts) and the
# veth network. Everything after <mpiexec> is passed through, so an MPMD
# line (`-n 2 prog : -n 2 prog`) works too, and so must -x WEFT_MODEL -x
# WEFT_WORKERS be: the launcher starts each host's daemon with a clean
# environment, as ssh does, so what is not passed on is not there. First it
# prints where 4 ranks land ("hosts: weft-host-a x2 weft-host-b x2") and
# fails unless both hosts are used. The namespaces get unique names and are
# removed on exit.
#
# Exit 77 (ctest SKIP_RETURN_CODE) with a message when namespaces cannot be
# created: not root, no `ip`/`unshare`, or a container that forbids them.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mpiexec=${1:?usage: netns.sh <mpiexec> <program> [args...]}
shift

skip() {
	echo "netns.sh: SKIPPED: $*" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root to create network namespaces (run the test as root)"
command -v ip >/dev/null 2>&1 || skip "no ip(8) (Debian: iproute2)"
command -v unshare >/dev/null 2>&1 || skip "no unshare(1) (Debian: util-linux)"

id=$$
a=weft-a-$id b=weft-b-$id
# Private /24 from the id, so parallel runs do not share addresses.
net=10.$((200 + id % 50)).$((id / 50 % 250))
ipa=$net.1 ipb=$net.2
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-netns.XXXXXX") || exit 1

cleanup() {
	ip netns del "$a" 2>/dev/null
	ip netns del "$b" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add "$a" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip netns add "$b" || skip "cannot create a second network namespace"
ip link add "va$id" type veth peer name "vb$id" 2>"$work/err" ||
	skip "cannot create a veth pair: $(cat "$work/err")"
ip link set "va$id" netns "$a" && ip link set "vb$id" netns "$b" || exit 1
ip -n "$a" addr add "$ipa/24" dev "va$id" && ip -n "$b" addr add "$ipb/24" dev "vb$id" || exit 1
for ns in "$a" "$b"; do ip -n "$ns" link set lo up || exit 1; done
ip -n "$a" link set "va$id" up && ip -n "$b" link set "vb$id" up || exit 1

# The launcher maps a host (its address) to its namespace.
printf '%s %s weft-host-a\n%s %s weft-host-b\n' "$ipa" "$a" "$ipb" "$b" >"$work/hosts.map"
printf '%s slots=2\n%s slots=2\n' "$ipa" "$ipb" >"$work/hostfile"
export WEFT_NETNS_MAP="$work/hosts.map"

set -- --hostfile "$work/hostfile" \
	--mca plm_rsh_agent "$here/netns-launch.sh" \
	--mca btl tcp,self --mca btl_tcp_if_include "$net.0/24" \
	--mca oob_tcp_if_include "$net.0/24" "$@"
# mpiexec starts on host a: under a's name, in a's network. First, where
# 4 ranks land (one line "hosts: ..."), then the run asked for.
on_a() {
	ip netns exec "$a" unshare --uts sh -c 'hostname "$0" && exec "$@"' weft-host-a "$@"
}
hosts=$(on_a $mpiexec --hostfile "$work/hostfile" --mca plm_rsh_agent "$here/netns-launch.sh" \
	-n 4 hostname | sort | uniq -c | awk '{ printf " %s x%s", $2, $1 }')
echo "hosts:$hosts"
case $hosts in
*weft-host-a*weft-host-b*) ;;
*)
	echo "netns.sh: the ranks did not run on both simulated hosts" >&2
	exit 1
	;;
esac
on_a $mpiexec "$@"
