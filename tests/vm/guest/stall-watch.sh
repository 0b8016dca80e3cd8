#!/bin/sh
# stall-watch: follows the kernel log for the whole guest run. The first time RCU says
# its grace-period kthread's timer did not fire ("timer wakeup didn't happen"), it
# prints, once, what the timers look like: every CPU's tick and clock-event state
# (/proc/timer_list) and a few seconds of the timer-migration hierarchy's events (which
# CPU it believes active). A guest where that timer is lost sleeps with every vCPU
# halted (seen once in CI on 6.12, issue 28), and the stall text alone cannot say
# whether a CPU's clock event, or the hierarchy, lost it.
T=/sys/kernel/tracing
dump_timers() {
    echo "CPUHPD-VM: stall-watch: a lost timer: /proc/timer_list follows"
    cat /proc/timer_list 2>&1
    # In a trace instance of its own: the global buffer may hold a scenario's kprobes.
    local i=$T/instances/stall-watch
    if [ -d $T/events/timer_migration ] && mkdir $i 2>/dev/null; then
        echo "CPUHPD-VM: stall-watch: 3 s of timer_migration events follow"
        echo 1 >$i/events/timer_migration/enable
        sleep 3
        echo 0 >$i/events/timer_migration/enable
        tail -n 300 $i/trace
        rmdir $i
    else
        echo "CPUHPD-VM: stall-watch: no timer_migration tracepoints in this kernel"
    fi
    echo "CPUHPD-VM: stall-watch: end of the dump"
}
cat /dev/kmsg 2>/dev/null | while read -r line; do
    case "$line" in
    *"timer wakeup didn't happen"*) dump_timers; break ;;
    esac
done
