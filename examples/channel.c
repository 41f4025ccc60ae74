/* channel: producers and a consumer connected by a bounded channel.
 *
 * Three producer tasks send the numbers 1..1000 each; the main thread
 * receives until the channel is closed and empty. The last producer to
 * finish closes the channel (an atomic countdown), the way a Go program
 * closes a channel after its WaitGroup. A full channel makes a sender wait:
 * under fibers and mn the fiber parks and its worker runs other tasks;
 * under threads and spawn the thread blocks. The consumer is the main
 * thread, not a task, so that even one worker under threads cannot end up
 * with every worker blocked on a full channel. */
#include <stdatomic.h>
#include <stdio.h>
#include <weft/weft.h>

#define PRODUCERS    3
#define PER_PRODUCER 1000

typedef struct shared {
	weft_chan chan;
	atomic_int running; /* producers that have not finished */
} shared;

static void produce(void *arg)
{
	shared *s = arg;
	for (int i = 1; i <= PER_PRODUCER; i++)
		if (weft_chan_send(&s->chan, &i) != 0)
			break;
	if (atomic_fetch_sub(&s->running, 1) == 1)
		weft_chan_close(&s->chan); /* receivers drain, then see WEFT_ECLOSED */
}

int main(void)
{
	int buf[16];
	shared s;
	weft_task producers[PRODUCERS];
	weft_rt *rt;

	if (weft_rt_create(&rt, NULL) != 0)
		return 1;
	weft_chan_init(&s.chan, sizeof(int), 16, buf); /* room for 16 ints */
	atomic_init(&s.running, PRODUCERS);
	for (int p = 0; p < PRODUCERS; p++) {
		weft_task_init(&producers[p], produce, &s);
		if (weft_post(rt, &producers[p]) != 0)
			return 1;
	}

	long count = 0, sum = 0;
	int v;
	while (weft_chan_recv(&s.chan, &v) == 0) {
		count++;
		sum += v;
	}
	printf("received %ld values, sum %ld\n", count, sum);
	return weft_rt_destroy(rt) == 0 ? 0 : 1;
}
