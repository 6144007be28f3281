#!/usr/bin/env bash
# QEMU wrapper for scripts/guest/run.sh (QEMU=this): runs QEMU under gdb with
# tests/debug/${GDBCMDS:-vring.gdb}; "-device help" probes go straight through.
real=${REAL_QEMU:-/tmp/virtio-dbg/qemu}
case " $* " in *" help "*) exec "$real" "$@" ;; esac
exec gdb -q -batch -nx -x "$(dirname "$0")/${GDBCMDS:-vring.gdb}" --args "$real" "$@"
