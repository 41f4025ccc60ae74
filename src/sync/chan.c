/* weft_chan: a ring of capacity elements in the caller's buffer and one
 * FIFO queue of waiters. Only one kind waits at a time (senders while the
 * ring is full, receivers while it is empty), recorded in state. A sender
 * that finds a waiting receiver copies straight into the receiver's buffer,
 * and a receiver that frees a slot moves the first waiting sender's element
 * into the ring, so every hand-off is in arrival order. A select
 * (select.c) queues one waiter per case on each of its channels; the first
 * channel to pop one of them claims the select, and the others skip theirs
 * when they reach them. */
#include <string.h>

#include "core/internal.h"
#include "sync/chan.h"
#include "sync/waiter.h"

enum { NOBODY, SENDERS, RECEIVERS };

int weft_chan_init(weft_chan *ch, size_t elem_size, size_t capacity, void *buf)
{
	if (!ch || elem_size == 0 || (capacity > 0 && !buf) ||
	    (capacity > 0 && elem_size > SIZE_MAX / capacity))
		return WEFT_EINVAL;
	memset(ch, 0, sizeof(*ch));
	ch->buf_ = buf;
	ch->elem_size_ = elem_size;
	ch->capacity_ = capacity;
	return 0;
}

static unsigned char *slot(weft_chan *ch, size_t i)
{
	return ch->buf_ + ((ch->head_index_ + i) % ch->capacity_) * ch->elem_size_;
}

/* Pops the first waiter if it is of the given kind, skipping cases of a
 * select that another case already won. Caller holds the lock. */
static weft__waiter *pop_kind(weft__sync *s, uint32_t kind)
{
	while (s->state == kind) {
		weft__waiter *w = weft__sync_pop(s);
		if (!s->head)
			s->state = NOBODY;
		if (w && (!w->sel || weft__select_claim(w)))
			return w;
	}
	return NULL;
}

#define NO_DEADLINE INT64_MAX

static int wait_as(weft__sync *s, uint32_t kind, void *data, int64_t deadline)
{
	s->state = kind;
	if (deadline == NO_DEADLINE)
		return weft__sync_wait(s, data);
	int rc = weft__sync_wait_until(s, data, deadline);
	if (rc == WEFT_ETIMEDOUT) {
		if (!s->head)
			s->state = NOBODY;
		weft__lock_release(&s->lock);
	}
	return rc;
}

static int send_until(weft_chan *ch, const void *elem, int64_t deadline);
static int recv_until(weft_chan *ch, void *out, int64_t deadline);

int weft_chan_send(weft_chan *ch, const void *elem)
{
	return send_until(ch, elem, NO_DEADLINE);
}

int weft_chan_send_until(weft_chan *ch, const void *elem, int64_t deadline_ns)
{
	return send_until(ch, elem, deadline_ns);
}

int weft_chan_recv(weft_chan *ch, void *out)
{
	return recv_until(ch, out, NO_DEADLINE);
}

int weft_chan_recv_until(weft_chan *ch, void *out, int64_t deadline_ns)
{
	return recv_until(ch, out, deadline_ns);
}

static int send_until(weft_chan *ch, const void *elem, int64_t deadline)
{
	if (!ch || !elem || ch->elem_size_ == 0)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(ch);
	weft__lock_acquire(&s->lock);
	weft__waiter *r = NULL;
	int rc = weft__chan_try_send(ch, elem, &r);
	if (rc == WEFT__CHAN_WOULD_WAIT)
		return wait_as(s, SENDERS, (void *)elem, deadline);
	weft__lock_release(&s->lock);
	if (r)
		weft__waiter_unpark(r);
	return rc;
}

int weft__chan_try_send(weft_chan *ch, const void *elem, weft__waiter **wake)
{
	weft__sync *s = WEFT__SYNC(ch);
	if (ch->closed_)
		return WEFT_ECLOSED;
	weft__waiter *r = pop_kind(s, RECEIVERS);
	if (r) {
		memcpy(r->data, elem, ch->elem_size_);
		*wake = r;
		return 0;
	}
	if (ch->count_ < ch->capacity_) {
		memcpy(slot(ch, ch->count_++), elem, ch->elem_size_);
		return 0;
	}
	return WEFT__CHAN_WOULD_WAIT;
}

int weft__chan_try_recv(weft_chan *ch, void *out, weft__waiter **wake)
{
	weft__sync *s = WEFT__SYNC(ch);
	weft__waiter *w = NULL;
	if (ch->count_ > 0) {
		memcpy(out, slot(ch, 0), ch->elem_size_);
		ch->head_index_ = (ch->head_index_ + 1) % ch->capacity_;
		ch->count_--;
		if ((w = pop_kind(s, SENDERS)) != NULL)
			memcpy(slot(ch, ch->count_++), w->data, ch->elem_size_);
	} else if ((w = pop_kind(s, SENDERS)) != NULL) {
		memcpy(out, w->data, ch->elem_size_); /* unbuffered: straight across */
	} else if (ch->closed_) {
		return WEFT_ECLOSED;
	} else {
		return WEFT__CHAN_WOULD_WAIT;
	}
	*wake = w;
	return 0;
}

void weft__chan_enqueue(weft_chan *ch, bool send, weft__waiter *w)
{
	weft__sync *s = WEFT__SYNC(ch);
	s->state = send ? SENDERS : RECEIVERS;
	weft__sync_push(s, w);
}

void weft__chan_dequeue(weft_chan *ch, weft__waiter *w)
{
	weft__sync *s = WEFT__SYNC(ch);
	weft__waiter *prev = NULL;
	for (weft__waiter *x = s->head; x; prev = x, x = x->next) {
		if (x != w)
			continue;
		if (prev)
			prev->next = w->next;
		else
			s->head = w->next;
		if (s->tail == w)
			s->tail = prev;
		break;
	}
	if (!s->head)
		s->state = NOBODY;
}

static int recv_until(weft_chan *ch, void *out, int64_t deadline)
{
	if (!ch || !out || ch->elem_size_ == 0)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(ch);
	weft__lock_acquire(&s->lock);
	weft__waiter *w = NULL;
	int rc = weft__chan_try_recv(ch, out, &w);
	if (rc == WEFT__CHAN_WOULD_WAIT)
		return wait_as(s, RECEIVERS, out, deadline);
	weft__lock_release(&s->lock);
	if (w)
		weft__waiter_unpark(w);
	return rc;
}

int weft_chan_close(weft_chan *ch)
{
	if (!ch || ch->elem_size_ == 0)
		return WEFT_EINVAL;
	weft__sync *s = WEFT__SYNC(ch);
	weft__lock_acquire(&s->lock);
	if (ch->closed_) {
		weft__lock_release(&s->lock);
		return WEFT_ECLOSED;
	}
	ch->closed_ = 1;
	weft__waiter *all = weft__sync_take_all(s), *list = NULL, **tail = &list;
	s->state = NOBODY;
	for (weft__waiter *w = all, *next; w; w = next) {
		next = w->next;
		if (w->sel && !weft__select_claim(w))
			continue; /* its select went another way */
		w->result = WEFT_ECLOSED;
		w->next = NULL;
		*tail = w;
		tail = &w->next;
	}
	weft__lock_release(&s->lock);
	weft__sync_unpark_list(list);
	return 0;
}
