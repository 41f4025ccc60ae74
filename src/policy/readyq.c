/* Chooses the ready-queue discipline named by the configuration. */
#include <string.h>

#include "core/internal.h"

static const weft__policy_ops *const policies[] = {
        [WEFT_POLICY_PRIORITY] = &weft__policy_priority, [WEFT_POLICY_FIFO] = &weft__policy_fifo,
        [WEFT_POLICY_RANDOM] = &weft__policy_random,     [WEFT_POLICY_PSJF] = &weft__policy_psjf,
        [WEFT_POLICY_MLFQ] = &weft__policy_mlfq,
};
_Static_assert(sizeof(policies) / sizeof(policies[0]) == WEFT_POLICY_COUNT_,
               "one ops table per policy");

void weft__readyq_init(weft__readyq *q, const weft_config *cfg)
{
	memset(q, 0, sizeof(*q));
	q->ops = policies[cfg->policy];
	q->rng = cfg->seed;
	q->levels = cfg->mlfq_levels ? cfg->mlfq_levels : WEFT__DEFAULT_LEVELS;
	q->epoch = 1;
}
