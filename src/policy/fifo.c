/* Policy fifo: first posted, first run. An intrusive singly linked list
 * through weft_task.next_, so neither push nor pop allocates. */
#include "core/internal.h"

static void fifo_push(weft__readyq *q, weft_task *t)
{
	t->next_ = NULL;
	if (q->tail)
		q->tail->next_ = t;
	else
		q->head = t;
	q->tail = t;
}

static weft_task *fifo_pop(weft__readyq *q)
{
	weft_task *t = q->head;
	q->head = t->next_;
	if (!q->head)
		q->tail = NULL;
	return t;
}

static void fifo_unpop(weft__readyq *q, weft_task *t)
{
	t->next_ = q->head;
	q->head = t;
	if (!q->tail)
		q->tail = t;
}

const weft__policy_ops weft__policy_fifo = {
        .name = "fifo",
        .push = fifo_push,
        .pop = fifo_pop,
        .unpop = fifo_unpop,
        .ordered = false,
};
