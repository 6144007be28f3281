set pagination off
set confirm off
set print thread-events off
set print inferior-events off
handle SIGUSR1 SIGUSR2 SIGPIPE SIG38 nostop noprint pass
break virtio_memory_listener_commit
commands
silent
printf "GDB: commit\n"
bt 5
continue
end
break virtio_error
commands
printf "GDB: virtio_error\n"
bt 14
source /work/main/tests/debug/dump-vq.gdb
end
run
