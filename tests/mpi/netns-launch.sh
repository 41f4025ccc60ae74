#!/bin/sh
# Open MPI's rsh agent for tests/mpi/netns.sh: called as ssh would be,
# `netns-launch.sh [ssh options] <host> <command...>`, it runs the command in
# the network namespace that WEFT_NETNS_MAP (lines "<address> <namespace>
# <host name>") gives for <host>, under that host's own name, through sh as
# sshd would, with as little of the caller's environment as sshd passes
# (PATH and HOME): what mpiexec does not pass on with -x is not there.
set -u
while [ $# -gt 0 ]; do
	case $1 in
	-*) shift ;;
	*) break ;;
	esac
done
host=${1:?netns-launch.sh: no host}
shift
map=${WEFT_NETNS_MAP:?netns-launch.sh: WEFT_NETNS_MAP unset}
ns=$(awk -v h="$host" '$1 == h { print $2 }' "$map")
name=$(awk -v h="$host" '$1 == h { print $3 }' "$map")
if [ -z "$ns" ]; then
	echo "netns-launch.sh: unknown host $host" >&2
	exit 1
fi
exec env -i PATH="$PATH" HOME="${HOME:-/}" ip netns exec "$ns" unshare --uts \
	sh -c 'hostname "$0" && exec sh -c "$*"' "$name" "$@"
