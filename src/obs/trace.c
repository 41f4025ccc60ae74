/* Trace buffers and the Chrome trace-event JSON writer (see trace.h;
 * weft_trace_flush, which needs the runtime, is in core/observe.c).
 *
 * Each slot (a worker, or the shared one for other threads) keeps a list of
 * fixed-size chunks of events; appending takes the slot's lock, which only
 * weft_trace_flush ever contends. Events carry the task's address and post
 * time, which together name a flow (a task can be posted again once it has
 * finished, so the address alone is not enough). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <weft/weft.h>

#include "core/alloc.h"
#include "core/lock_raw.h" /* without the preemption guard: the caller holds it */
#include "core/log.h"
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
	FILE *file;  /* opened at create; each write replaces its content */
	char *path;  /* for messages: a copy, after the slots */
	slot slot[];
};

static size_t trace_size(int slots, const char *path)
{
	return sizeof(struct weft__trace) + (size_t)slots * sizeof(slot) + strlen(path) + 1;
}

int weft__trace_create(struct weft__trace **out, int slots, const char *path)
{
	*out = NULL;
	/* Opened now, so that a path that cannot be written fails the
	 * runtime's creation rather than its end. */
	FILE *f = fopen(path, "we");
	if (!f) {
		weft__log(WEFT_LOG_ERROR, "weft: cannot write the trace to %s: %s\n", path,
		          strerror(errno));
		return WEFT_EINVAL;
	}
	struct weft__trace *tr = weft__alloc(trace_size(slots, path));
	if (!tr) {
		fclose(f);
		return WEFT_ENOMEM;
	}
	memset(tr, 0, trace_size(slots, path));
	tr->slots = slots;
	tr->origin = weft__latency_now();
	tr->file = f;
	tr->path = (char *)&tr->slot[slots];
	memcpy(tr->path, path, strlen(path) + 1);
	*out = tr;
	return 0;
}

void weft__trace_add(struct weft__trace *tr, int worker, weft__trace_kind kind, const void *task,
                     int64_t posted, bool first)
{
	slot *s = worker >= 0 && worker < tr->slots - 1 ? &tr->slot[worker]
	                                                : &tr->slot[tr->slots - 1];
	event e = {.ts = weft__latency_now(),
	           .task = task,
	           .task_posted = posted,
	           .kind = (uint8_t)kind,
	           .first = first};
	weft__lock_acquire_raw(&s->lock);
	chunk *c = s->tail;
	if (!c || c->used == CHUNK_EVENTS) {
		chunk *n = weft__alloc(sizeof(chunk));
		if (!n) {
			tr->failed = true;
			weft__lock_release_raw(&s->lock);
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
	weft__lock_release_raw(&s->lock);
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

static int write_file(const struct weft__trace *tr, const char *model, const char *policy,
                      int workers)
{
	FILE *f = tr->file;
	if (fflush(f) != 0 || ftruncate(fileno(f), 0) != 0 || fseek(f, 0, SEEK_SET) != 0) {
		weft__log(WEFT_LOG_ERROR, "weft: cannot write the trace to %s: %s\n", tr->path,
		          strerror(errno));
		return WEFT_EINVAL;
	}
	clearerr(f);
	fprintf(f,
	        "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"model\":\"%s\",\"policy\":\"%s\","
	        "\"workers\":%d,\"events_lost\":%s},\n\"traceEvents\":[",
	        model, policy, workers, tr->failed ? "true" : "false");
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
	if (fflush(f) != 0 || ferror(f)) {
		weft__log(WEFT_LOG_ERROR, "weft: writing the trace to %s failed: %s\n", tr->path,
		          strerror(errno));
		return WEFT_EINVAL;
	}
	return 0;
}

int weft__trace_write(struct weft__trace *tr, const char *model, const char *policy, int workers)
{
	for (int i = 0; i < tr->slots; i++)
		weft__lock_acquire_raw(&tr->slot[i].lock);
	int rc = write_file(tr, model, policy, workers);
	for (int i = tr->slots - 1; i >= 0; i--)
		weft__lock_release_raw(&tr->slot[i].lock);
	return rc;
}

void weft__trace_destroy(struct weft__trace *tr)
{
	if (!tr)
		return;
	for (int i = 0; i < tr->slots; i++) {
		chunk *c = tr->slot[i].head;
		while (c) {
			chunk *next = c->next;
			weft__free(c, sizeof(*c));
			c = next;
		}
	}
	if (fclose(tr->file) != 0)
		weft__log(WEFT_LOG_ERROR, "weft: writing the trace to %s failed: %s\n", tr->path,
		          strerror(errno));
	weft__free(tr, trace_size(tr->slots, tr->path));
}
