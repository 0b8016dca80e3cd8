// SPDX-License-Identifier: GPL-2.0
/*
 * hrt_target: does a timer that an idle CPU starts land on the hrtimer base of a CPU
 * that is offline? A pinned timer ticks every period_us on CPU home (kept idle); each
 * tick starts a second, unpinned timer 10 s out, which hrtimer_start() places where
 * get_nohz_timer_target() says, notes that base's CPU, whether the base was online and
 * whether the CPU was inactive, and cancels it. The counts are in
 * /sys/module/hrt_target/parameters/. A CPU counts as inactive only when it was so both
 * before and after the start: a batch deactivates or activates each CPU once, so it
 * was inactive when get_nohz_timer_target() looked at it.
 */
#include <linux/module.h>
#include <linux/hrtimer.h>
#include <linux/cpumask.h>

static int home;
module_param(home, int, 0444);
static uint period_us = 50;
module_param(period_us, uint, 0444);
static uint starts, remote, offline_base, inactive_cpu;
module_param(starts, uint, 0444);
module_param(remote, uint, 0444);
module_param(offline_base, uint, 0444);
module_param(inactive_cpu, uint, 0444);
static int last_offline_cpu = -1;
module_param(last_offline_cpu, int, 0444);

static struct hrtimer tick, probe;
static struct cpumask active_before; /* only tick_fn() on home uses it */

static enum hrtimer_restart probe_fn(struct hrtimer *t)
{
	return HRTIMER_NORESTART;
}

static enum hrtimer_restart tick_fn(struct hrtimer *t)
{
	struct hrtimer_cpu_base *cb;

	cpumask_copy(&active_before, cpu_active_mask);
	hrtimer_start(&probe, ms_to_ktime(10000), HRTIMER_MODE_REL_HARD);
	cb = READ_ONCE(probe.base)->cpu_base;
	WRITE_ONCE(starts, starts + 1);
	if (cb->cpu != smp_processor_id())
		WRITE_ONCE(remote, remote + 1);
	if (!cb->online) {
		WRITE_ONCE(offline_base, offline_base + 1);
		WRITE_ONCE(last_offline_cpu, cb->cpu);
	}
	if (!cpumask_test_cpu(cb->cpu, &active_before) && !cpu_active(cb->cpu))
		WRITE_ONCE(inactive_cpu, inactive_cpu + 1);
	hrtimer_try_to_cancel(&probe);
	hrtimer_forward_now(t, ns_to_ktime(period_us * NSEC_PER_USEC));
	return HRTIMER_RESTART;
}

static void start_tick(void *unused)
{
	hrtimer_start(&tick, ns_to_ktime(period_us * NSEC_PER_USEC), HRTIMER_MODE_REL_PINNED_HARD);
}

static int __init hrt_target_init(void)
{
	if (home < 0 || home >= nr_cpu_ids || !cpu_online(home))
		return -EINVAL;
	hrtimer_init(&tick, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	tick.function = tick_fn;
	hrtimer_init(&probe, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
	probe.function = probe_fn;
	return smp_call_function_single(home, start_tick, NULL, 1);
}

static void __exit hrt_target_exit(void)
{
	hrtimer_cancel(&tick);
	hrtimer_cancel(&probe);
	pr_info("hrt_target: starts %u remote %u offline_base %u inactive_cpu %u last_offline_cpu %d\n",
		starts, remote, offline_base, inactive_cpu, last_offline_cpu);
}

module_init(hrt_target_init);
module_exit(hrt_target_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cpuhpd test: where an idle CPU's unpinned hrtimer lands");
