/* A FIFO of tasks linked through next_, for one owner (no locking): the
 * fiber models' run lists; and the post-order keys that threads and fibers
 * keep in seq_ until a task reaches the ready queue. */
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

/* Post order across a model's queues. A task carries a key in seq_ from
 * its post until the ready queue stamps its own: a post from outside the
 * workers 2 * its ticket + 1 (the ticket is core's count of outside posts
 * before it, which weft_post leaves in seq_), a task's post 2 * the
 * outside posts counted so far. So a task's post sorts before every
 * outside post that enters after it returned, and after every one that
 * returned before it was made (one load of a line only outside posters
 * write). */
static inline uint64_t weft__outside_post_key(uint64_t ticket)
{
	return 2 * ticket + 1;
}

static inline uint64_t weft__task_post_key(weft_rt *rt)
{
	return 2 * atomic_load_explicit(&rt->done.external_posted, memory_order_relaxed);
}

/* The first ascending run of *list (by seq_), cut off it. */
static inline weft_task *weft__tasks_take_run(weft_task **list)
{
	weft_task *run = *list, *t = run;
	while (t->next_ && t->next_->seq_ >= t->seq_)
		t = t->next_;
	*list = t->next_;
	t->next_ = NULL;
	return run;
}

/* Merges two lists sorted by seq_, a's first among equals. */
static inline weft_task *weft__tasks_merge(weft_task *a, weft_task *b)
{
	weft_task *out = NULL, **p = &out;
	for (; a && b; p = &(*p)->next_) {
		if (b->seq_ < a->seq_) {
			*p = b;
			b = b->next_;
		} else {
			*p = a;
			a = a->next_;
		}
	}
	*p = a ? a : b;
	return out;
}

/* list (linked through next_) sorted by the post keys in seq_, equals in
 * list order: a stable merge of its ascending runs. A list already in
 * order (the usual case: an own post flushed late is what puts one out of
 * order) is only walked. */
static inline weft_task *weft__tasks_by_post_key(weft_task *list)
{
	bool sorted = true;
	for (weft_task *t = list; t && t->next_ && sorted; t = t->next_)
		sorted = t->next_->seq_ >= t->seq_;
	while (!sorted) {
		weft_task *out = NULL, **tail = &out;
		int runs = 0;
		while (list) {
			weft_task *a = weft__tasks_take_run(&list);
			*tail = weft__tasks_merge(a, list ? weft__tasks_take_run(&list) : NULL);
			while (*tail)
				tail = &(*tail)->next_;
			runs++;
		}
		list = out;
		sorted = runs <= 1;
	}
	return list;
}

#endif
