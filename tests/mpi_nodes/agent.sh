#!/bin/sh
# Open MPI's rsh agent for tests/mpi_nodes.sh: stands in for ssh to a
# "node" that is a network namespace on this machine. mpirun calls it as
# ssh, `agent.sh [OPTIONS] HOST COMMAND...` (plm_rsh_agent), and it runs
# COMMAND with sh inside that node: its network namespace, its hostname and
# its private /tmp, entered through the node's holder process, whose pid
# tests/mpi_nodes.sh left in $PBMPI_NODES/HOST.pid. Options (ssh's -x and
# the like) are ignored; an unknown HOST is ssh's exit 255.
set -u
while [ $# -gt 0 ]; do
    case $1 in
    -*) shift ;;
    *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "agent.sh: usage: agent.sh [OPTIONS] HOST COMMAND..." >&2; exit 255; }
host=$1
shift
pidfile="${PBMPI_NODES:-}/$host.pid"
[ -n "${PBMPI_NODES:-}" ] && [ -r "$pidfile" ] ||
    { echo "agent.sh: no node $host (no $pidfile; set PBMPI_NODES)" >&2; exit 255; }
# As ssh does, the words of COMMAND are joined and run by the node's shell.
exec nsenter -t "$(cat "$pidfile")" -n -u -m -- sh -c "$*"
