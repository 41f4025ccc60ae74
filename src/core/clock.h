/* Time for deadlines: the CLOCK_MONOTONIC nanoseconds weft_clock_ns reads,
 * and the arithmetic on them. Deadlines and timeouts come from programs and
 * may sit at either end of int64_t (INT64_MIN, INT64_MAX, now + INT64_MAX):
 * every sum and difference saturates instead of wrapping, so a deadline in
 * the past stays in the past (the wait is a poll) and INT64_MAX stays
 * "never" (the wait has no end but its partner). Every site that adds a
 * timeout to a time or subtracts two times goes through these. */
#ifndef WEFT_SRC_CORE_CLOCK_H
#define WEFT_SRC_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t weft__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* a + b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t weft__sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a - b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t weft__sat_sub(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* The nanoseconds from now until deadline, never below 0 (a deadline that
 * has passed leaves 0: poll) and INT64_MAX for the deadline INT64_MAX
 * (a wait with no end, whatever now is). */
static inline int64_t weft__ns_left(int64_t deadline, int64_t now)
{
	if (deadline == INT64_MAX)
		return INT64_MAX;
	int64_t left = weft__sat_sub(deadline, now);
	return left > 0 ? left : 0;
}

#endif
