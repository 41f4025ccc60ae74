/* Model mn's queues (mn.h): the injection queue, each worker's resume
 * queue, and stealing from the others' deques and resume queues under the
 * lazy rule (mn.c's essay). */
#include <sched.h>

#include "core/clock.h"
#include "core/observe.h"
#include "model/mn.h"
#include "obs/probes.h"

/* In this order, against take_injected's: the inbox, a move under way,
 * the queue (a look that finds the inbox taken sees the move, and one that
 * finds the move over sees where it put the tasks). seq_cst loads: plain
 * ones on x86-64, ordered among themselves on aarch64. */
bool weft__mn_injected_waiting(mn *m)
{
	return atomic_load(&m->injected.head) != NULL || atomic_load(&m->injecting) != 0 ||
	       atomic_load(&m->queue_len) != 0;
}

void weft__mn_inject(mn *m, weft_task *t)
{
	weft__lock_acquire(&m->lock);
	weft__readyq_push(&m->queue, t);
	atomic_store_explicit(&m->queue_len, m->queue.len, memory_order_relaxed);
	weft__lock_release(&m->lock);
}

/* One task from the injection queue, in the policy's order. When many
 * wait and other workers could share them, a batch more of the same
 * priority (any, under fifo) goes onto the taker's deque in order (the
 * best is popped first), where idle workers steal from it rather than all
 * take the injection lock for every task (Go's globrunqget). The price: a
 * task posted later with a more urgent priority may wait for the batch
 * (INJECTED_BATCH tasks at most). */
weft_task *weft__mn_take_injected(mn *m, mn_worker *self)
{
	if (!weft__mn_injected_waiting(m))
		return NULL;
	/* A move under way, made visible before the inbox is emptied (the
	 * fence orders the two stores on aarch64 too), ended only once the
	 * tasks are in the queue or on this worker's deque. */
	bool move = !weft__inbox_empty(&m->injected);
	if (move) {
		atomic_fetch_add(&m->injecting, 1);
		atomic_thread_fence(memory_order_seq_cst);
	}
	weft__lock_acquire(&m->lock);
	for (weft_task *t = move ? weft__inbox_take(&m->injected) : NULL; t;) {
		weft_task *next = t->next_;
		weft__readyq_push(&m->queue, t);
		t = next;
	}
	weft_task *t = weft__readyq_pop(&m->queue);
	size_t want = m->nworkers > 1 ? m->queue.len / (size_t)m->nworkers : 0, batch = 0;
	want = want > INJECTED_BATCH ? INJECTED_BATCH : want;
	weft_task *more[INJECTED_BATCH];
	while (t && batch < want) {
		weft_task *x = weft__readyq_pop(&m->queue);
		if (!m->any_priority && x->priority_ != t->priority_) {
			weft__readyq_unpop(&m->queue, x);
			break;
		}
		more[batch++] = x;
	}
	atomic_store_explicit(&m->queue_len, m->queue.len, memory_order_relaxed);
	weft__lock_release(&m->lock);
	if (batch > 0) {
		self->batch_base = atomic_load_explicit(&self->deque.bottom, memory_order_relaxed);
		self->batch_end = self->batch_base + (int64_t)batch;
	}
	while (batch > 0) {
		if (!weft__deque_push(&self->deque, more[--batch])) {
			weft__mn_inject(m, more[batch]); /* full: back where every worker sees it */
		}
	}
	if (move)
		atomic_fetch_sub(&m->injecting, 1);
	return t;
}

/* Whether tasks of the last batch self took are still on its deque. */
bool weft__mn_batch_pending(mn_worker *self)
{
	return atomic_load_explicit(&self->deque.top, memory_order_relaxed) < self->batch_end &&
	       atomic_load_explicit(&self->deque.bottom, memory_order_relaxed) > self->batch_base;
}

/* ------------------------------------------------------------ fibers */

/* The resume queue's lock: a few instructions are held under it, by the
 * owner nearly always, so a spin lock whose release is a plain store (one
 * locked instruction per use, not weft__lock's two: a yield takes it
 * twice). Not preempted while held (nopreempt); a holder the kernel
 * descheduled is waited for with sched_yield. */
static void rlock_take(mn_worker *mw)
{
	weft__tls.nopreempt++;
	for (int spins = 0;; spins++) {
		int free = 0;
		if (atomic_load_explicit(&mw->rlock, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(
		            &mw->rlock, &free, 1, memory_order_acquire, memory_order_relaxed))
			return;
		if (spins < 64)
			weft__cpu_relax();
		else
			sched_yield();
	}
}

static void rlock_drop(mn_worker *mw)
{
	atomic_store_explicit(&mw->rlock, 0, memory_order_release);
	weft__tls.nopreempt--;
}

void weft__mn_resume_push(mn_worker *mw, weft_task *t)
{
	rlock_take(mw);
	weft__task_list_append(&mw->resume, t);
	atomic_store_explicit(&mw->nresume, mw->nresume + 1, memory_order_relaxed);
	rlock_drop(mw);
}

weft_task *weft__mn_resume_pop(mn_worker *mw)
{
	if (!atomic_load_explicit(&mw->nresume, memory_order_relaxed))
		return NULL;
	rlock_take(mw);
	weft_task *t = weft__task_list_pop(&mw->resume);
	if (t) {
		atomic_store_explicit(&mw->nresume, mw->nresume - 1, memory_order_relaxed);
		atomic_store_explicit(&mw->rpops, mw->rpops + 1, memory_order_relaxed);
	}
	rlock_drop(mw);
	return t;
}

/* The oldest movable fiber queued on v, taken for self. Under v's lock. */
static weft_task *take_fiber(mn_worker *v)
{
	weft_task *prev = NULL, *t = v->resume.head;
	while (t && !weft__fiber_movable(t)) {
		prev = t;
		t = t->next_;
	}
	if (!t)
		return NULL;
	if (prev)
		prev->next_ = t->next_;
	else
		v->resume.head = t->next_;
	if (v->resume.tail == t)
		v->resume.tail = prev;
	atomic_store_explicit(&v->nresume, v->nresume - 1, memory_order_relaxed);
	atomic_store_explicit(&v->rpops, v->rpops + 1, memory_order_relaxed);
	return t;
}

/* A fiber queued on a busy worker, for self (see "Fibers that move"):
 * victims others from start on. Two or more queued (a surplus: its worker
 * can resume one at a time) are taken from at once; a lone one once self
 * saw it there at two looks at least MOVE_SIT_NS apart with nothing
 * resumed from that queue between them (two fibers taking turns on v,
 * a ping-pong, show one of them at every look). The looks read two
 * counters, no lock. */
static weft_task *steal_fiber(mn *m, mn_worker *self, int start, int victims, bool *fresh)
{
	int n = m->nworkers;
	for (int k = 0; k < victims && k < n - 1; k++) {
		int vi = (self->fw.index + 1 + (start + k) % (n - 1)) % n;
		mn_worker *v = &m->workers[vi];
		int queued = atomic_load_explicit(&v->nresume, memory_order_relaxed);
		if (!queued)
			continue;
		uint64_t pops = atomic_load_explicit(&v->rpops, memory_order_relaxed);
		int64_t now = weft__now_ns();
		if (queued >= 2) {
			self->rseen_victim = vi; /* the take below needs pops unchanged */
			self->rseen_pops = pops;
			self->rseen_ns = now - MOVE_SIT_NS;
		}
		if (vi != self->rseen_victim || pops != self->rseen_pops) {
			self->rseen_victim = vi;
			self->rseen_pops = pops;
			self->rseen_ns = now;
			*fresh = true;
			continue;
		}
		if (now - self->rseen_ns < MOVE_SIT_NS) {
			*fresh = true;
			continue;
		}
		weft_task *t = NULL;
		rlock_take(v);
		if (v->rpops == pops)
			t = take_fiber(v);
		rlock_drop(v);
		self->rseen_victim = -1;
		if (t) {
			weft__count(&self->fw.steals, 1);
			return t;
		}
	}
	return NULL;
}

/* Tries `victims` others (all when victims >= nworkers - 1), from a random
 * one on, under the lazy-steal rule of core/idle.h. *fresh: a lone task
 * was seen and left for now, or a race lost: worth another look. */
weft_task *weft__mn_steal(mn *m, mn_worker *self, int victims, bool *fresh)
{
	int n = m->nworkers;
	if (n < 2)
		return NULL;
	weft__count(&self->fw.steal_attempts, 1);
	self->rng = self->rng * 6364136223846793005ull + 1442695040888963407ull;
	int start = (int)((self->rng >> 33) % (uint64_t)(n - 1));
	int v = weft__idle_find_sitting(&m->idle, &self->idler, start,
	                                victims < n - 1 ? victims : n - 1, false);
	if (v < 0) {
		*fresh |= self->idler.seen_victim >= 0;
		return steal_fiber(m, self, start, victims, fresh);
	}
	weft_task *t = weft__idle_take_sitting(&m->idle, &self->idler, v);
	if (!t) {
		*fresh = true; /* taken while we looked */
		return NULL;
	}
	weft__count(&self->fw.steals, 1);
	WEFT__PROBE2(task__steal, self->fw.index, 1);
	weft__trace(m->rt, WEFT__TRACE_STEAL, NULL, false);
	return t;
}
