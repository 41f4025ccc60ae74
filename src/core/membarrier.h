/* An asymmetric barrier: lets a rare path (a worker about to sleep) pay for
 * the full fence that a hot path (every post) would otherwise need. After
 * weft__membarrier() returns, every thread of the process that was running
 * has executed a full memory barrier at some point during the call; so for
 * a poster that stores its task and then loads the idle counts with only a
 * compiler barrier between, either the store is visible to whatever the
 * caller loads next, or the poster's load comes after the call's barrier
 * and sees what the caller stored before it (the idle counts).
 *
 * Linux: membarrier(2) with MEMBARRIER_CMD_PRIVATE_EXPEDITED (4.14 and
 * later; membarrier_linux.c). In the portable build (membarrier_posix.c),
 * or where the kernel or a seccomp filter refuses it,
 * weft__membarrier_init says so and callers keep their fence on the hot
 * path. */
#ifndef WEFT_SRC_CORE_MEMBARRIER_H
#define WEFT_SRC_CORE_MEMBARRIER_H

#include <stdbool.h>

/* Registers the process for expedited barriers (once; any thread): true
 * when weft__membarrier may be used. */
bool weft__membarrier_init(void);

/* Whether posters may still leave out their fence: true until a barrier
 * failed (weft__membarrier_usable is then false for good). A relaxed load
 * of a line nobody writes. */
bool weft__membarrier_usable(void);

/* The barrier; false when it could not be had (the caller then treats the
 * posts made meanwhile as possibly unseen: it stays awake and looks again). */
bool weft__membarrier(void);

#endif
