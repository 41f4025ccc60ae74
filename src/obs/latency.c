/* Latency histograms: allocation, sums and the quantize-style printout
 * (see latency.h). weft_stats_latency, which needs the runtime, is in
 * core/observe.c. */
#include <stdio.h>
#include <string.h>

#include "obs/latency.h"

static size_t latency_size(int slots)
{
	return sizeof(struct weft__latency) + (size_t)slots * sizeof(weft__latency_slot);
}

struct weft__latency *weft__latency_create(int slots)
{
	struct weft__latency *l = weft__alloc(latency_size(slots));
	if (!l)
		return NULL;
	memset(l, 0, latency_size(slots));
	l->slots = slots;
	return l;
}

void weft__latency_destroy(struct weft__latency *l)
{
	if (l)
		weft__free(l, latency_size(l->slots));
}

void weft__latency_reset(struct weft__latency *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->slots; i++)
		for (int k = 0; k < WEFT_LATENCY_COUNT_; k++)
			for (int b = 0; b < WEFT_LATENCY_BUCKETS; b++)
				atomic_store_explicit(&l->slot[i].bucket[k][b], 0,
				                      memory_order_relaxed);
}

bool weft__latency_worker_times(const struct weft__latency *l, int index, int64_t *busy,
                                int64_t *idle)
{
	if (!l || index < 0 || index >= l->slots - 1)
		return false;
	const weft__latency_slot *s = &l->slot[index];
	int64_t started = atomic_load_explicit(&s->started, memory_order_relaxed);
	if (!started)
		return false;
	int64_t now = weft__latency_now();
	int64_t stopped = atomic_load_explicit(&s->stopped, memory_order_relaxed);
	int64_t end = stopped ? stopped : now;
	int64_t idle_ns = atomic_load_explicit(&s->idle_ns, memory_order_relaxed);
	int64_t since = atomic_load_explicit(&s->idle_since, memory_order_relaxed);
	if (since && !stopped)
		idle_ns += now - since;
	*idle = idle_ns;
	*busy = end - started - idle_ns > 0 ? end - started - idle_ns : 0;
	return true;
}

void weft__latency_sum(const struct weft__latency *l, weft_latency kind,
                       uint64_t out[WEFT_LATENCY_BUCKETS])
{
	memset(out, 0, sizeof(uint64_t) * WEFT_LATENCY_BUCKETS);
	for (int i = 0; l && i < l->slots; i++)
		for (int b = 0; b < WEFT_LATENCY_BUCKETS; b++)
			out[b] += atomic_load_explicit(&l->slot[i].bucket[kind][b],
			                               memory_order_relaxed);
}

const char *weft_latency_name(weft_latency kind)
{
	static const char *const names[] = {
	        [WEFT_LATENCY_QUEUE_WAIT] = "queue wait (post to first run)",
	        [WEFT_LATENCY_RUN] = "run (first run to end)",
	        [WEFT_LATENCY_TURNAROUND] = "turnaround (post to end)",
	};
	_Static_assert(sizeof(names) / sizeof(names[0]) == WEFT_LATENCY_COUNT_,
	               "a name per latency");
	return (unsigned)kind < WEFT_LATENCY_COUNT_ ? names[kind] : NULL;
}

/* DTrace's quantize layout: the value is the bucket's lower bound, the bar
 * 40 characters for the whole count, and one empty row either side of the
 * non-empty range. */
void weft__latency_print(const struct weft__latency *l, FILE *out)
{
	for (int k = 0; k < WEFT_LATENCY_COUNT_; k++) {
		uint64_t c[WEFT_LATENCY_BUCKETS], total = 0;
		weft__latency_sum(l, (weft_latency)k, c);
		int lo = -1, hi = -1;
		for (int b = 0; b < WEFT_LATENCY_BUCKETS; b++) {
			total += c[b];
			if (c[b]) {
				if (lo < 0)
					lo = b;
				hi = b;
			}
		}
		fprintf(out, "weft: task %s, ns\n", weft_latency_name((weft_latency)k));
		if (!total) {
			fprintf(out, "      (no tasks)\n");
			continue;
		}
		lo = lo > 0 ? lo - 1 : 0;
		hi = hi < WEFT_LATENCY_BUCKETS - 1 ? hi + 1 : hi;
		fprintf(out, "%16s  %s %s\n", "value", "------------- Distribution -------------",
		        "count");
		for (int b = lo; b <= hi; b++) {
			unsigned long long value = b == 0 ? 0 : 1ull << (b - 1);
			int bar = (int)((c[b] * 40 + total / 2) / total);
			char bars[41];
			memset(bars, '@', (size_t)bar);
			memset(bars + bar, ' ', (size_t)(40 - bar));
			bars[40] = '\0';
			fprintf(out, "%16llu |%s %llu\n", value, bars, (unsigned long long)c[b]);
		}
	}
}
