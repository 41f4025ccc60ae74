/* core/membarrier.h without membarrier(2): POSIX has no way to make every
 * other thread execute a barrier, so weft__membarrier_init says no and
 * posters keep their full fence on the hot path (one mfence or dmb ish per
 * post, the cost docs/platforms.md measures). An mprotect of a page all
 * threads have touched (the trick some runtimes use) would work on most
 * kernels but is not promised by any standard: not done. A port to
 * macOS can get the same barrier from thread_get_register_pointer_values
 * on each thread (what .NET's FlushProcessWriteBuffers does there). */
#include <stdatomic.h>

#include "core/membarrier.h"

bool weft__membarrier_init(void)
{
	return false;
}

bool weft__membarrier_usable(void)
{
	return false;
}

bool weft__membarrier(void)
{
	atomic_thread_fence(memory_order_seq_cst);
	return false;
}
