/* weft_stats_get and weft_stats_print. The counters live with the model,
 * per worker where they are hot; this file sums and formats them. */
#include <string.h>

#include "core/internal.h"
#include "core/observe.h"
#include "io/files.h"

static void sum(weft_rt *rt, weft_stats *out);

/* Every entry point reads the model's state, which destroy frees once
 * every caller has left (weft__rt_enter). */
int weft_stats_get(weft_rt *rt, weft_stats *out)
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if (!out)
		return WEFT_EINVAL;
	if ((rc = weft__rt_enter(rt)) != 0)
		return rc;
	sum(rt, out);
	weft__rt_leave(rt);
	return 0;
}

static void sum(weft_rt *rt, weft_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->model = rt->cfg.model;
	out->policy = rt->cfg.policy;
	out->workers = rt->cfg.workers;
	out->workers_source = rt->workers_source;
	out->cpus_affinity = rt->cpus_affinity;
	out->cpus_cgroup = rt->cpus_cgroup;
	out->queue_capacity = rt->cfg.queue_capacity;
	out->rejected = atomic_load(&rt->rejected);
	out->seed = rt->cfg.seed;
	rt->model->stats(rt, out);
	out->standins = atomic_load_explicit(&rt->standins_started, memory_order_relaxed);
	uint64_t held = atomic_load_explicit(&rt->deferred_cancelled, memory_order_relaxed);
	out->posted += held; /* deferred, cancelled before the model saw them */
	out->cancelled += held;
	for (int i = 0; i < rt->cfg.workers; i++) {
		int64_t busy, idle;
		if (weft__worker_times(rt, i, &busy, &idle)) {
			out->busy_ns += (uint64_t)busy;
			out->idle_ns += (uint64_t)idle;
		}
	}
	const weft_stats *b = &rt->stats_base;
	out->posted -= b->posted;
	out->run -= b->run;
	out->rejected -= b->rejected;
	out->cancelled -= b->cancelled;
	out->sleeps -= b->sleeps;
	out->wakeups -= b->wakeups;
	out->switches -= b->switches;
	out->preemptions -= b->preemptions;
	out->steals -= b->steals;
	out->steal_attempts -= b->steal_attempts;
	out->spins -= b->spins;
	out->standins -= b->standins;
	out->parks -= b->parks;
	out->unparks -= b->unparks;
	out->busy_ns -= b->busy_ns;
	out->idle_ns -= b->idle_ns;
}

int weft_stats_reset(weft_rt *rt)
{
	int rc = weft__rt_check(rt);
	if (rc || (rc = weft__rt_enter(rt)) != 0)
		return rc;
	weft_stats now;
	memset(&rt->stats_base, 0, sizeof(rt->stats_base));
	sum(rt, &now);
	rt->stats_base = now;
	weft__latency_reset(rt->latency);
	weft__rt_leave(rt);
	return 0;
}

static void print(weft_rt *rt, FILE *out);

int weft_stats_print(weft_rt *rt, FILE *out)
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if (!out)
		return WEFT_EINVAL;
	if ((rc = weft__rt_enter(rt)) != 0)
		return rc;
	print(rt, out);
	weft__rt_leave(rt);
	return 0;
}

static void print(weft_rt *rt, FILE *out)
{
	weft_stats s;
	sum(rt, &s);
	char capacity[32] = "unbounded";
	if (s.queue_capacity > 0)
		snprintf(capacity, sizeof(capacity), "%ld", s.queue_capacity);
	/* What is in force (after the model's configure), each with its
	 * reason where there is a choice: the worker count's source and what
	 * it saw (CPUs, the cgroup limit and which one), then the settings. */
	fprintf(out,
	        "weft: model %s, %d worker%s from %s (%s), policy %s, preemption %s, quantum %lu "
	        "us, queue capacity %s\n"
	        "weft: posted %llu, run %llu, rejected (full) %llu, cancelled %llu\n"
	        "weft: worker sleeps %llu, wake-ups by posts %llu\n",
	        weft_model_name(s.model), s.workers, s.workers == 1 ? "" : "s",
	        weft_workers_source_name(s.workers_source), rt->workers_detail,
	        weft_policy_name(s.policy), weft_preempt_name(rt->cfg.preempt),
	        (unsigned long)rt->cfg.quantum_us, capacity, (unsigned long long)s.posted,
	        (unsigned long long)s.run, (unsigned long long)s.rejected,
	        (unsigned long long)s.cancelled, (unsigned long long)s.sleeps,
	        (unsigned long long)s.wakeups);
	if (s.standins)
		fprintf(out,
		        "weft: stand-ins %llu (a stand-in thread started or a spare one called "
		        "while every worker was blocked in a weft wait with tasks queued)\n",
		        (unsigned long long)s.standins);
	if (rt->model->print_stats)
		rt->model->print_stats(&s, out);
	weft__io_print_stats(rt, out);
	if (rt->model->print_workers)
		rt->model->print_workers(rt, out);
	for (int i = 0; i < rt->cfg.workers; i++) {
		int64_t busy, idle;
		if (!weft__worker_times(rt, i, &busy, &idle))
			continue;
		double total = (double)(busy + idle);
		fprintf(out, "weft: worker %d busy %.3f ms, idle %.3f ms (%.0f%% busy)\n", i,
		        (double)busy / 1e6, (double)idle / 1e6,
		        total > 0 ? 100.0 * (double)busy / total : 0.0);
	}
	if (rt->latency)
		weft__latency_print(rt->latency, out);
	if (s.policy == WEFT_POLICY_RANDOM)
		fprintf(out, "weft: random policy seed %llu (replay with WEFT_SEED=%llu)\n",
		        (unsigned long long)s.seed, (unsigned long long)s.seed);
}
