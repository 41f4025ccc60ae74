/* weft's messages: weft__log formats one, then hands it to the program's
 * hook (weft_set_log) or writes it on stderr.
 *
 * The hook and its context are one pair that a reader must see together,
 * while weft_set_log may run at any moment: a sequence lock (odd while a
 * writer changes the pair; writers serialised by a mutex) lets every
 * message read them without a lock. The hook itself is called with no lock
 * held, so it may be slow or call weft_set_log. Not for signal handlers:
 * formatting and the hook are not async-signal-safe (the stack-overflow
 * report uses write(2) directly). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static pthread_mutex_t writer = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned seq; /* odd while weft_set_log changes the pair */
static _Atomic(weft_log_fn) hook;
static _Atomic(void *) hook_ctx;

int weft_set_log(weft_log_fn fn, void *ctx)
{
	weft__fork_hook_install();
	pthread_mutex_lock(&writer);
	unsigned s = atomic_load_explicit(&seq, memory_order_relaxed);
	atomic_store_explicit(&seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&hook, fn, memory_order_relaxed);
	atomic_store_explicit(&hook_ctx, ctx, memory_order_relaxed);
	atomic_store_explicit(&seq, s + 2, memory_order_release);
	pthread_mutex_unlock(&writer);
	return 0;
}

/* Held across fork (runtime.c): the child then finds the writer free and
 * the sequence even, where a fork in the middle of weft_set_log would leave
 * it odd, and every message in the child spinning. */
void weft__log_fork_prepare(void)
{
	pthread_mutex_lock(&writer);
}

void weft__log_fork_done(void)
{
	pthread_mutex_unlock(&writer);
}

/* The installed pair, read consistently; false when there is none. */
static bool current_hook(weft_log_fn *fn, void **ctx)
{
	for (;;) {
		unsigned s = atomic_load_explicit(&seq, memory_order_acquire);
		if (s & 1)
			continue;
		*fn = atomic_load_explicit(&hook, memory_order_relaxed);
		*ctx = atomic_load_explicit(&hook_ctx, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&seq, memory_order_relaxed) == s)
			return *fn != NULL;
	}
}

void weft__log(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	weft_log_fn fn;
	void *ctx;
	if (!current_hook(&fn, &ctx)) {
		if ((size_t)n < sizeof(buf)) {
			fputs(buf, stderr);
		} else { /* too long for buf: stderr gets all of it */
			va_start(ap, fmt);
			vfprintf(stderr, fmt, ap);
			va_end(ap);
		}
		return;
	}
	/* The hook gets the text alone: no "weft: " prefix, no newline at the
	 * end (a message cut to fit buf ends with "..."). */
	size_t len = strlen(buf);
	if ((size_t)n >= sizeof(buf))
		memcpy(buf + len - 3, "...", 3);
	while (len > 0 && buf[len - 1] == '\n')
		buf[--len] = '\0';
	const char *msg = buf;
	if (strncmp(msg, "weft: ", 6) == 0)
		msg += 6;
	fn(level, msg, ctx);
}
