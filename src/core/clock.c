/* The coarse clock's lag (clock.h: weft__passed). */
#include <stdatomic.h>

#include "core/clock.h"

int64_t weft__coarse_lag_ns(void)
{
	/* -1: not asked yet; every thread that asks first gets the same. */
	static _Atomic int64_t lag = -1;
	int64_t l = atomic_load_explicit(&lag, memory_order_relaxed);
	if (__builtin_expect(l >= 0, 1))
		return l;
	l = 0;
#ifdef CLOCK_MONOTONIC_COARSE
	struct timespec res;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0)
		l = 2 * (int64_t)res.tv_nsec;
#endif
	atomic_store_explicit(&lag, l, memory_order_relaxed);
	return l;
}
