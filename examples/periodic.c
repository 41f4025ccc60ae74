/* periodic: a function run every period until cancelled (weft_post_every),
 * as GCD's timer sources, Go's time.Ticker and Tokio's interval.
 *
 * Run k is due at start + k * period, computed from the start, so lateness
 * never adds up into drift; runs never overlap; the periodic task is
 * caller-owned and in use until cancelled. Here the function cancels
 * itself at its 20th run, and main waits for that. */
#include <stdio.h>
#include <weft/weft.h>

#define MS 1000000LL /* nanoseconds */

typedef struct ticker {
	weft_periodic p;
	int64_t start;
	int early; /* runs that started before their deadline: none */
} ticker;

static void tick(void *arg)
{
	ticker *tk = arg;
	uint64_t k = weft_periodic_runs(&tk->p); /* runs that returned: this is run k */
	if (weft_clock_ns() < tk->start + (int64_t)k * 5 * MS)
		tk->early++;
	if (k + 1 == 20)
		weft_periodic_cancel(&tk->p); /* from inside: no run after this one */
}

int main(void)
{
	weft_rt *rt;
	if (weft_rt_create(&rt, NULL) != 0)
		return 1;
	ticker tk = {.early = 0};
	tk.start = weft_clock_ns();
	int rc = weft_post_every(rt, &tk.p, tick, &tk, tk.start, 5 * MS, WEFT_EVERY_SKIP);
	if (rc != 0) {
		fprintf(stderr, "weft_post_every: %s\n", weft_strerror(rc));
		return 1;
	}
	weft_periodic_wait(&tk.p); /* until it stopped and its last run returned */
	printf("every 5 ms: %llu runs, %d early\n", (unsigned long long)weft_periodic_runs(&tk.p),
	       tk.early);
	return weft_rt_destroy(rt) == 0 ? 0 : 1;
}
