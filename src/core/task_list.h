/* A FIFO of tasks linked through next_, for one owner (no locking): the
 * fiber models' run lists. */
#ifndef WEFT_SRC_CORE_TASK_LIST_H
#define WEFT_SRC_CORE_TASK_LIST_H

#include "core/internal.h"

typedef struct weft__task_list {
	weft_task *head, *tail;
} weft__task_list;

static inline void weft__task_list_append(weft__task_list *l, weft_task *t)
{
	t->next_ = NULL;
	if (l->tail)
		l->tail->next_ = t;
	else
		l->head = t;
	l->tail = t;
}

static inline weft_task *weft__task_list_pop(weft__task_list *l)
{
	weft_task *t = l->head;
	if (t && !(l->head = t->next_))
		l->tail = NULL;
	return t;
}

#endif
