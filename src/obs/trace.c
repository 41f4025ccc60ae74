/* Trace buffers and the Chrome trace-event JSON writer (see trace.h;
 * weft_trace_flush, which needs the runtime, is in core/observe.c).
 *
 * Each slot (a worker, or the shared one for other threads) keeps a list of
 * fixed-size chunks of events; appending takes the slot's lock, which only
 * weft_trace_flush ever contends. Events carry the task's address and post
 * stamp; the stamp alone names a flow (weft__trace_stamp never hands out
 * one twice), where the address (reused by every frame at one depth) and
 * a nanosecond clock did not: fib(20) by weft_fork_join repeated ids.
 *
 * The writer, not the recording side, keeps slices nested: per track it
 * keeps the stack of open slices, and when a run segment ends (a fiber
 * switching out) with slices open inside it (a half run inline that
 * parked), it closes them and reopens them when that task's next segment
 * begins. It also writes a post's arrow only when the trace holds where it
 * ends (a task a cancelling destroy discarded, or whose post the model
 * refused, never ran), so every arrow ends at its task's slice. Events of
 * threads that are not workers share one slot but each thread gets a
 * track (tid 1000, 1001, ... in order of appearance). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <weft/weft.h>

#include "core/alloc.h"
#include "core/lock_raw.h" /* without the preemption guard: the caller holds it */
#include "core/log.h"
#include "core/os.h"
#include "obs/latency.h"
#include "obs/trace.h"

#define CHUNK_EVENTS 4096

typedef struct event {
	int64_t ts;          /* ns, CLOCK_MONOTONIC */
	const void *task;    /* NULL for instants without a task */
	int64_t task_posted; /* the task's posted_ns_: with task, the flow id */
	uint32_t thread;     /* the shared slot: the kernel thread id */
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
	_Atomic int64_t last_stamp; /* weft__trace_stamp */
	bool failed;                /* an allocation failed: the file says events were lost */
	FILE *file;                 /* opened at create; each write replaces its content */
	char *path;                 /* for messages: a copy, after the slots */
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

int64_t weft__trace_stamp(struct weft__trace *tr, int64_t now)
{
	int64_t last = atomic_load_explicit(&tr->last_stamp, memory_order_relaxed);
	for (;;) {
		int64_t v = now > last ? now : last + 1;
		if (atomic_compare_exchange_weak_explicit(
		            &tr->last_stamp, &last, v, memory_order_relaxed, memory_order_relaxed))
			return v;
	}
}

#ifdef WEFT_OS_LINUX
#include <sys/syscall.h>

/* The kernel's thread id, which perf and /proc show beside the trace. */
static uint32_t trace_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}
#else
/* POSIX has no numeric thread id: a number per thread, from 1, as the
 * trace viewer only needs them distinct. */
static uint32_t trace_tid(void)
{
	static _Atomic uint32_t next;
	return atomic_fetch_add_explicit(&next, 1, memory_order_relaxed) + 1;
}
#endif

static uint32_t thread_id(void)
{
	static _Thread_local uint32_t id;
	if (!id)
		id = trace_tid();
	return id;
}

void weft__trace_add(struct weft__trace *tr, int worker, weft__trace_kind kind, const void *task,
                     int64_t posted, bool first)
{
	bool own = worker >= 0 && worker < tr->slots - 1;
	slot *s = own ? &tr->slot[worker] : &tr->slot[tr->slots - 1];
	event e = {.ts = weft__latency_now(),
	           .task = task,
	           .task_posted = posted,
	           .thread = own ? 0 : thread_id(),
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

/* A flow's id: its post stamp, counted from the trace's origin (exact in a
 * JSON double for 104 days). */
static uint64_t flow_id(const struct weft__trace *tr, const event *e)
{
	return (uint64_t)(e->task_posted - tr->origin) + 1;
}

static bool ends_flow(const event *e)
{
	return (e->kind == WEFT__TRACE_BEGIN && e->first) || e->kind == WEFT__TRACE_INLINE_BEGIN;
}

static bool opens_inline(uint8_t kind)
{
	return kind == WEFT__TRACE_INLINE_BEGIN || kind == WEFT__TRACE_LOOP_BEGIN ||
	       kind == WEFT__TRACE_HALF_BEGIN || kind == WEFT__TRACE_JOIN_BEGIN;
}

static const char *const instant_names[WEFT__TRACE_KINDS] = {
        [WEFT__TRACE_PARK] = "park",   [WEFT__TRACE_WAKE] = "wake",
        [WEFT__TRACE_YIELD] = "yield", [WEFT__TRACE_PREEMPT] = "preempt",
        [WEFT__TRACE_STEAL] = "steal",
};

/* A growable array of T (weft__alloc'd: the writer runs with every slot
 * locked, never on a hot path). False when it cannot grow. */
static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? 2 * *cap : 64;
	void *nv = weft__alloc(c * size);
	if (!nv)
		return false;
	if (*v) {
		memcpy(nv, *v, n * size);
		weft__free(*v, *cap * size);
	}
	*v = nv;
	*cap = c;
	return true;
}

typedef struct track {
	int tid;
	uint32_t thread; /* the shared slot's tracks: whose */
	const event **open;
	size_t n, cap;
} track;

typedef struct saved {
	int tid;
	const void *key; /* the task whose segment they were open in */
	const event *e;  /* their BEGIN events, outermost first */
} saved;

typedef struct writer {
	FILE *f;
	struct weft__trace *tr; /* its failed flag: the writer may lose events too */
	bool comma;
	uint64_t *ends; /* sorted flow ids that end in the trace; NULL: keep every post */
	size_t nends, ends_cap;
	saved *sv;
	size_t nsv, sv_cap;
} writer;

static const char *sep(writer *w)
{
	const char *s = w->comma ? ",\n" : "\n";
	w->comma = true;
	return s;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static bool flow_ends(const writer *w, uint64_t id)
{
	return !w->ends || bsearch(&id, w->ends, w->nends, sizeof(id), cmp_u64);
}

static void begin_slice(writer *w, const track *k, const event *b, int64_t ts, bool first)
{
	double us = (double)(ts - w->tr->origin) / 1e3;
	if (b->kind == WEFT__TRACE_LOOP_BEGIN || b->kind == WEFT__TRACE_HALF_BEGIN ||
	    b->kind == WEFT__TRACE_JOIN_BEGIN) {
		fprintf(w->f,
		        "%s{\"name\":\"%s\",\"cat\":\"loop\",\"ph\":\"B\",\"pid\":1,\"tid\":%d,"
		        "\"ts\":%.3f}",
		        sep(w),
		        b->kind == WEFT__TRACE_LOOP_BEGIN   ? "parallel loop"
		        : b->kind == WEFT__TRACE_JOIN_BEGIN ? "fork-join"
		                                            : "kept half",
		        k->tid, us);
		return;
	}
	bool inl = b->kind == WEFT__TRACE_INLINE_BEGIN;
	fprintf(w->f,
	        "%s{\"name\":\"task\",\"cat\":\"task\",\"ph\":\"B\",\"pid\":1,\"tid\":%d,"
	        "\"ts\":%.3f,\"args\":{\"task\":\"%p\",\"first\":%s%s}}",
	        sep(w), k->tid, us, b->task, first ? "true" : "false",
	        inl ? ",\"inline\":true" : "");
	if (first)
		fprintf(w->f,
		        "%s{\"name\":\"post\",\"cat\":\"task\",\"ph\":\"f\",\"bp\":\"e\","
		        "\"id\":%llu,\"pid\":1,\"tid\":%d,\"ts\":%.3f}",
		        sep(w), (unsigned long long)flow_id(w->tr, b), k->tid, us);
}

static void end_slice(writer *w, const track *k, int64_t ts)
{
	fprintf(w->f, "%s{\"ph\":\"E\",\"pid\":1,\"tid\":%d,\"ts\":%.3f}", sep(w), k->tid,
	        (double)(ts - w->tr->origin) / 1e3);
}

static void push(writer *w, track *k, const event *e)
{
	if (grow((void **)&k->open, &k->cap, k->n, sizeof(*k->open)))
		k->open[k->n++] = e;
	else
		w->tr->failed = true;
}

/* A segment of task key begins again: reopens what its last one left. */
static void reopen(writer *w, track *k, const void *key, int64_t ts)
{
	size_t hi = w->nsv;
	while (hi > 0 && !(w->sv[hi - 1].tid == k->tid && w->sv[hi - 1].key == key))
		hi--;
	if (!hi)
		return;
	size_t lo = hi - 1;
	while (lo > 0 && w->sv[lo - 1].tid == k->tid && w->sv[lo - 1].key == key)
		lo--;
	for (size_t i = lo; i < hi; i++) {
		begin_slice(w, k, w->sv[i].e, ts, false);
		push(w, k, w->sv[i].e);
	}
	memmove(&w->sv[lo], &w->sv[hi], (w->nsv - hi) * sizeof(*w->sv));
	w->nsv -= hi - lo;
}

/* A segment ends: the slices open inside it are closed (innermost first)
 * and kept for its task's next segment. */
static void end_segment(writer *w, track *k, int64_t ts)
{
	size_t seg = k->n;
	while (seg > 0 && opens_inline(k->open[seg - 1]->kind))
		seg--;
	if (seg == 0) { /* no segment open: slices of a thread that is no worker */
		if (k->n) {
			end_slice(w, k, ts);
			k->n--;
		}
		return;
	}
	const void *key = k->open[seg - 1]->task;
	for (size_t i = k->n; i > seg; i--)
		end_slice(w, k, ts);
	for (size_t i = seg; i < k->n; i++) {
		if (!grow((void **)&w->sv, &w->sv_cap, w->nsv, sizeof(*w->sv))) {
			w->tr->failed = true;
			break;
		}
		w->sv[w->nsv++] = (saved){.tid = k->tid, .key = key, .e = k->open[i]};
	}
	end_slice(w, k, ts);
	k->n = seg - 1;
}

static void write_event(writer *w, track *k, const event *e)
{
	const struct weft__trace *tr = w->tr;
	double us = (double)(e->ts - tr->origin) / 1e3;
	switch ((weft__trace_kind)e->kind) {
	case WEFT__TRACE_POST:
		if (flow_ends(w, flow_id(tr, e)))
			fprintf(w->f,
			        "%s{\"name\":\"post\",\"cat\":\"task\",\"ph\":\"s\",\"id\":%llu,"
			        "\"pid\":1,\"tid\":%d,\"ts\":%.3f}",
			        sep(w), (unsigned long long)flow_id(tr, e), k->tid, us);
		break;
	case WEFT__TRACE_BEGIN:
		begin_slice(w, k, e, e->ts, e->first);
		push(w, k, e);
		if (!e->first)
			reopen(w, k, e->task, e->ts);
		break;
	case WEFT__TRACE_END:
		end_segment(w, k, e->ts);
		break;
	case WEFT__TRACE_INLINE_BEGIN:
	case WEFT__TRACE_LOOP_BEGIN:
	case WEFT__TRACE_HALF_BEGIN:
	case WEFT__TRACE_JOIN_BEGIN:
		begin_slice(w, k, e, e->ts, e->kind == WEFT__TRACE_INLINE_BEGIN);
		push(w, k, e);
		break;
	case WEFT__TRACE_INLINE_END:
		if (k->n && opens_inline(k->open[k->n - 1]->kind)) {
			end_slice(w, k, e->ts);
			k->n--;
		}
		break;
	default:
		fprintf(w->f,
		        "%s{\"name\":\"%s\",\"cat\":\"sched\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,"
		        "\"tid\":%d,\"ts\":%.3f}",
		        sep(w), instant_names[e->kind], k->tid, us);
		break;
	}
}

/* The ids of every flow end the trace holds, sorted (w->ends stays NULL,
 * and every post is written, when there is no memory for them). */
static void collect_ends(writer *w)
{
	const struct weft__trace *tr = w->tr;
	size_t n = 0;
	for (int i = 0; i < tr->slots; i++)
		for (const chunk *c = tr->slot[i].head; c; c = c->next)
			for (size_t j = 0; j < c->used; j++)
				n += ends_flow(&c->ev[j]);
	if (!n)
		n = 1;
	w->ends = weft__alloc(n * sizeof(*w->ends));
	if (!w->ends)
		return;
	w->ends_cap = n;
	for (int i = 0; i < tr->slots; i++)
		for (const chunk *c = tr->slot[i].head; c; c = c->next)
			for (size_t j = 0; j < c->used; j++)
				if (ends_flow(&c->ev[j]))
					w->ends[w->nends++] = flow_id(tr, &c->ev[j]);
	qsort(w->ends, w->nends, sizeof(*w->ends), cmp_u64);
}

static void name_track(writer *w, int tid, const char *what, long n)
{
	fprintf(w->f,
	        "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
	        "\"args\":{\"name\":\"%s%ld\"}}",
	        sep(w), tid, what, n);
}

static void write_slots(writer *w)
{
	struct weft__trace *tr = w->tr;
	track k = {0};
	for (int i = 0; i < tr->slots - 1; i++) {
		k.tid = i;
		k.n = 0;
		name_track(w, i, "worker ", i);
		for (const chunk *c = tr->slot[i].head; c; c = c->next)
			for (size_t j = 0; j < c->used; j++)
				write_event(w, &k, &c->ev[j]);
	}
	weft__free(k.open, k.cap * sizeof(*k.open));
	/* The shared slot: a track per thread. */
	track *ks = NULL;
	size_t nk = 0, kcap = 0;
	const slot *sh = &tr->slot[tr->slots - 1];
	for (const chunk *c = sh->head; c; c = c->next)
		for (size_t j = 0; j < c->used; j++) {
			const event *e = &c->ev[j];
			size_t t = 0;
			while (t < nk && ks[t].thread != e->thread)
				t++;
			if (t == nk) {
				if (!grow((void **)&ks, &kcap, nk, sizeof(*ks))) {
					w->tr->failed = true;
					goto out;
				}
				ks[nk++] = (track){.tid = 1000 + (int)t, .thread = e->thread};
				name_track(w, ks[t].tid, "thread ", (long)e->thread);
			}
			write_event(w, &ks[t], e);
		}
	if (!nk)
		name_track(w, 1000, "other threads ", 0);
out:
	for (size_t t = 0; t < nk; t++)
		weft__free(ks[t].open, ks[t].cap * sizeof(*ks[t].open));
	weft__free(ks, kcap * sizeof(*ks));
}

static int write_file(struct weft__trace *tr, const char *model, const char *policy, int workers)
{
	FILE *f = tr->file;
	if (fflush(f) != 0 || ftruncate(fileno(f), 0) != 0 || fseek(f, 0, SEEK_SET) != 0) {
		weft__log(WEFT_LOG_ERROR, "weft: cannot write the trace to %s: %s\n", tr->path,
		          strerror(errno));
		return WEFT_EINVAL;
	}
	clearerr(f);
	writer w = {.f = f, .tr = tr};
	collect_ends(&w);
	fprintf(f,
	        "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"model\":\"%s\",\"policy\":\"%s\","
	        "\"workers\":%d,\"events_lost\":%s},\n\"traceEvents\":[",
	        model, policy, workers, tr->failed ? "true" : "false");
	write_slots(&w);
	fprintf(f, "\n]}\n");
	weft__free(w.ends, w.ends_cap * sizeof(*w.ends));
	weft__free(w.sv, w.sv_cap * sizeof(*w.sv));
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
