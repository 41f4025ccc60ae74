/* The asymmetric barrier on Linux (membarrier.h): membarrier(2). Does not
 * fall back on MEMBARRIER_CMD_GLOBAL, whose cost (an RCU grace period,
 * milliseconds) would make every worker's sleep that slow. */
#include <pthread.h>
#include <stdatomic.h>

#include "core/membarrier.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic bool usable;

static void registration(void)
{
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return;
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
		return;
	atomic_store(&usable, true);
}

bool weft__membarrier_init(void)
{
	pthread_once(&once, registration);
	return atomic_load(&usable);
}

bool weft__membarrier_usable(void)
{
	return atomic_load_explicit(&usable, memory_order_relaxed);
}

bool weft__membarrier(void)
{
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return true;
	/* A forked child may not have inherited the registration: register
	 * again; if that fails too, posters go back to their fence. */
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
	    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return true;
	atomic_store(&usable, false);
	atomic_thread_fence(memory_order_seq_cst);
	return false;
}
