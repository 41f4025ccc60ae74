/* Trace buffers and the Chrome trace-event JSON writer (see trace.h).
 *
 * Each slot (a worker, or the shared one for other threads) keeps a list of
 * fixed-size chunks of events; appending takes the slot's lock, which only
 * weft_trace_flush ever contends. Events carry the task's address and post
 * time, which together name a flow (a task can be posted again once it has
 * finished, so the address alone is not enough). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/lock.h"
#include "obs/latency.h"
#include "obs/trace.h"

#define CHUNK_EVENTS 4096

typedef struct event {
	int64_t ts;          /* ns, CLOCK_MONOTONIC */
	const void *task;    /* NULL for instants without a task */
	int64_t task_posted; /* the task's posted_ns_: with task, the flow id */
	uint8_t kind;
	uint8_t first;
} event;

typedef struct chunk {
	struct chunk *next;
	size_t used;
	event ev[CHUNK_EVENTS];
} chunk;

typedef struct slot {
	WEFT__ALIGNED weft__lock lock;
	chunk *head, *tail;
} slot;

struct weft__trace {
	int slots; /* workers + 1: the last is for other threads */
	int64_t origin;
	bool failed; /* an allocation failed: the file says events were lost */
	slot slot[];
};

static size_t trace_size(int slots)
{
	return sizeof(struct weft__trace) + (size_t)slots * sizeof(slot);
}

int weft__trace_create(weft_rt *rt)
{
	rt->trace = NULL;
	if (!rt->cfg.trace_path || !rt->cfg.trace_path[0])
		return 0;
	int slots = rt->cfg.workers + 1;
	struct weft__trace *tr = weft__alloc(trace_size(slots));
	if (!tr)
		return WEFT_ENOMEM;
	memset(tr, 0, trace_size(slots));
	tr->slots = slots;
	tr->origin = weft__latency_now();
	rt->trace = tr;
	return 0;
}

void weft__trace_record(weft_rt *rt, weft__trace_kind kind, const weft_task *t, bool first)
{
	struct weft__trace *tr = rt->trace;
	int i = weft__tls.index;
	slot *s = weft__tls.rt == rt && i >= 0 && i < tr->slots - 1 ? &tr->slot[i]
	                                                            : &tr->slot[tr->slots - 1];
	event e = {.ts = weft__latency_now(),
	           .task = t,
	           .task_posted = t ? t->posted_ns_ : 0,
	           .kind = (uint8_t)kind,
	           .first = first};
	weft__lock_acquire(&s->lock);
	chunk *c = s->tail;
	if (!c || c->used == CHUNK_EVENTS) {
		chunk *n = weft__alloc(sizeof(chunk));
		if (!n) {
			tr->failed = true;
			weft__lock_release(&s->lock);
			return;
		}
		n->next = NULL;
		n->used = 0;
		if (c)
			c->next = n;
		else
			s->head = n;
		s->tail = c = n;
	}
	c->ev[c->used++] = e;
	weft__lock_release(&s->lock);
}

static uint64_t flow_id(const event *e)
{
	uint64_t z = (uint64_t)(uintptr_t)e->task ^ ((uint64_t)e->task_posted << 1);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return (z ^ (z >> 31)) >> 11; /* exact in a JSON double */
}

static const char *const instant_names[WEFT__TRACE_KINDS] = {
        [WEFT__TRACE_PARK] = "park",   [WEFT__TRACE_WAKE] = "wake",
        [WEFT__TRACE_YIELD] = "yield", [WEFT__TRACE_PREEMPT] = "preempt",
        [WEFT__TRACE_STEAL] = "steal",
};

static void write_event(FILE *f, const struct weft__trace *tr, const event *e, int tid, bool *comma)
{
	double us = (double)(e->ts - tr->origin) / 1e3;
	const char *sep = *comma ? ",\n" : "\n";
	*comma = true;
	switch ((weft__trace_kind)e->kind) {
	case WEFT__TRACE_POST:
		fprintf(f,
		        "%s{\"name\":\"post\",\"cat\":\"task\",\"ph\":\"s\",\"id\":%llu,\"pid\":1,"
		        "\"tid\":%d,\"ts\":%.3f}",
		        sep, (unsigned long long)flow_id(e), tid, us);
		break;
	case WEFT__TRACE_BEGIN:
		fprintf(f,
		        "%s{\"name\":\"task\",\"cat\":\"task\",\"ph\":\"B\",\"pid\":1,\"tid\":%d,"
		        "\"ts\":%.3f,\"args\":{\"task\":\"%p\",\"first\":%s}}",
		        sep, tid, us, e->task, e->first ? "true" : "false");
		if (e->first)
			fprintf(f,
			        ",\n{\"name\":\"post\",\"cat\":\"task\",\"ph\":\"f\",\"bp\":\"e\","
			        "\"id\":%llu,\"pid\":1,\"tid\":%d,\"ts\":%.3f}",
			        (unsigned long long)flow_id(e), tid, us);
		break;
	case WEFT__TRACE_END:
		fprintf(f,
		        "%s{\"name\":\"task\",\"cat\":\"task\",\"ph\":\"E\",\"pid\":1,\"tid\":%d,"
		        "\"ts\":%.3f}",
		        sep, tid, us);
		break;
	default:
		fprintf(f,
		        "%s{\"name\":\"%s\",\"cat\":\"sched\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,"
		        "\"tid\":%d,\"ts\":%.3f}",
		        sep, instant_names[e->kind], tid, us);
		break;
	}
}

static int write_file(const weft_rt *rt)
{
	const struct weft__trace *tr = rt->trace;
	FILE *f = fopen(rt->cfg.trace_path, "w");
	if (!f) {
		fprintf(stderr, "weft: cannot write the trace to %s: %s\n", rt->cfg.trace_path,
		        strerror(errno));
		return WEFT_EINVAL;
	}
	fprintf(f,
	        "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"model\":\"%s\",\"policy\":\"%s\","
	        "\"workers\":%d,\"events_lost\":%s},\n\"traceEvents\":[",
	        weft_model_name(rt->cfg.model), weft_policy_name(rt->cfg.policy), rt->cfg.workers,
	        tr->failed ? "true" : "false");
	bool comma = false;
	for (int i = 0; i < tr->slots; i++) {
		int tid = i == tr->slots - 1 ? 1000 : i;
		fprintf(f,
		        "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
		        "\"args\":{\"name\":\"%s%d\"}}",
		        comma ? ",\n" : "\n", tid,
		        i == tr->slots - 1 ? "other threads " : "worker ",
		        i == tr->slots - 1 ? 0 : i);
		comma = true;
		for (const chunk *c = tr->slot[i].head; c; c = c->next)
			for (size_t k = 0; k < c->used; k++)
				write_event(f, tr, &c->ev[k], tid, &comma);
	}
	fprintf(f, "\n]}\n");
	int rc = ferror(f) ? WEFT_EINVAL : 0;
	if (fclose(f) != 0)
		rc = WEFT_EINVAL;
	if (rc)
		fprintf(stderr, "weft: writing the trace to %s failed\n", rt->cfg.trace_path);
	return rc;
}

int weft_trace_flush(weft_rt *rt)
{
	if (!rt || rt->magic != WEFT__RT_MAGIC)
		return WEFT_EINVAL;
	if (!rt->trace)
		return WEFT_ENOTSUP;
	struct weft__trace *tr = rt->trace;
	for (int i = 0; i < tr->slots; i++)
		weft__lock_acquire(&tr->slot[i].lock);
	int rc = write_file(rt);
	for (int i = tr->slots - 1; i >= 0; i--)
		weft__lock_release(&tr->slot[i].lock);
	return rc;
}

void weft__trace_destroy(weft_rt *rt)
{
	struct weft__trace *tr = rt->trace;
	if (!tr)
		return;
	if (rt->magic == WEFT__RT_MAGIC)
		write_file(rt);
	for (int i = 0; i < tr->slots; i++) {
		chunk *c = tr->slot[i].head;
		while (c) {
			chunk *next = c->next;
			weft__free(c, sizeof(*c));
			c = next;
		}
	}
	weft__free(tr, trace_size(tr->slots));
	rt->trace = NULL;
}
