/* Hooks for weft's own tests. Not part of the public API: tests link the
 * static library, where these hidden symbols are visible. */
#ifndef WEFT_SRC_CORE_TESTING_H
#define WEFT_SRC_CORE_TESTING_H

#include <stdbool.h>

/* weft__fault_thread_create makes the nth thread creation from now (1 = the
 * next one) fail as if the system refused it; 0 disarms. Counts creations by
 * every runtime in the process. */
void weft__fault_thread_create(long nth);

/* weft__fault_timer_create makes the nth timer_create of a quantum clock
 * from now (1 = the next one) fail with errno err; 0 disarms. */
void weft__fault_timer_create(long nth, int err);

/* weft__fault_no_pwait2 makes pollers created from now on behave as on a
 * kernel without epoll_pwait2 (a timerfd carries the timeout) when on is
 * true; false probes the kernel again. */
void weft__fault_no_pwait2(bool on);

/* weft__live_allocations returns how many blocks weft has allocated and not
 * yet freed, over all runtimes. */
long weft__live_allocations(void);

#endif
