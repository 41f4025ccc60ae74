/* The runtime's side of statistics and traces (see observe.h): creating
 * and destroying obs's objects from the configuration, the calling
 * thread's track, and the public calls that take a runtime
 * (weft_stats_latency, weft_trace_flush). */
#include "core/observe.h"

int weft__observe_create(weft_rt *rt)
{
	rt->latency = NULL;
	rt->trace = NULL;
	if (rt->cfg.stats) {
		rt->latency = weft__latency_create(rt->cfg.workers + 1);
		if (!rt->latency)
			return WEFT_ENOMEM;
	}
	if (rt->cfg.trace_path && rt->cfg.trace_path[0])
		return weft__trace_create(&rt->trace, rt->cfg.workers + 1, rt->cfg.trace_path);
	return 0;
}

/* Holds the preemption guard while obs holds its slots' locks: a fiber
 * preempted there could be followed on its worker by one that records and
 * sleeps on the same lock for ever. */
static int write_trace(weft_rt *rt)
{
	weft__tls.nopreempt++;
	int rc = weft__trace_write(rt->trace, weft_model_name(rt->cfg.model),
	                           weft_policy_name(rt->cfg.policy), rt->cfg.workers);
	weft__tls.nopreempt--;
	return rc;
}

void weft__observe_destroy(weft_rt *rt)
{
	if (rt->trace) {
		if (rt->magic == WEFT__RT_MAGIC)
			(void)write_trace(rt);
		weft__trace_destroy(rt->trace);
		rt->trace = NULL;
	}
	weft__latency_destroy(rt->latency);
	rt->latency = NULL;
}

void weft__trace_record(weft_rt *rt, weft__trace_kind kind, const weft_task *t, bool first)
{
	int worker = weft__tls.rt == rt ? weft__tls.index : -1;
	weft__tls.nopreempt++;
	weft__trace_add(rt->trace, worker, kind, t, t ? t->posted_ns_ : 0, first);
	weft__tls.nopreempt--;
}

int64_t weft__inline_begin(weft_rt *rt, const weft_task *t)
{
	int64_t now = weft__latency_now();
	if (rt->latency)
		weft__latency_record(rt, WEFT_LATENCY_QUEUE_WAIT, now - t->posted_ns_);
	weft__trace(rt, WEFT__TRACE_INLINE_BEGIN, t, true);
	return now;
}

void weft__inline_end(weft_rt *rt, const weft_task *t, int64_t started)
{
	weft__trace(rt, WEFT__TRACE_INLINE_END, NULL, false);
	if (rt->latency) {
		int64_t ended = weft__latency_now();
		weft__latency_record(rt, WEFT_LATENCY_RUN, ended - started);
		weft__latency_record(rt, WEFT_LATENCY_TURNAROUND, ended - t->posted_ns_);
	}
}

int weft_stats_latency(weft_rt *rt, weft_latency kind, uint64_t counts[WEFT_LATENCY_BUCKETS])
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if ((unsigned)kind >= WEFT_LATENCY_COUNT_ || !counts)
		return WEFT_EINVAL;
	if (!rt->latency)
		return WEFT_ENOTSUP;
	if ((rc = weft__rt_enter(rt)) != 0) /* destroy frees the histograms */
		return rc;
	weft__latency_sum(rt->latency, kind, counts);
	weft__rt_leave(rt);
	return 0;
}

int weft_trace_flush(weft_rt *rt)
{
	int rc = weft__rt_check(rt);
	if (rc)
		return rc;
	if (!rt->trace)
		return WEFT_ENOTSUP;
	if ((rc = weft__rt_enter(rt)) != 0) /* destroy frees the trace */
		return rc;
	rc = write_trace(rt);
	weft__rt_leave(rt);
	return rc;
}
