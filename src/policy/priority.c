/* Policy priority: smallest priority first, post order among equals.
 *
 * Applications use a handful of small priorities (the seed posts 1; most
 * programs use a few levels), so priorities 0 .. WEFT__BUCKETS-1 each get a
 * FIFO list, and a bitmap of non-empty lists finds the smallest in one
 * instruction: push and pop are O(1) and touch two or three cache lines.
 * Any other priority (negative, or large) goes to an intrusive pairing heap
 * keyed by (priority, seq). Heap keys are all below or all above the bucket
 * range, so comparing the heap root's priority with the lowest bucket is
 * enough to pick exactly.
 *
 * Both structures link through the task itself (next_, child_), so posts
 * never allocate and capacity can be unbounded. A binary heap over an array
 * was rejected: it must be sized in advance or reallocated on post. A pure
 * pairing heap was measured: popping from a million queued tasks walked a
 * million-long child list and cost about 1 us per task. The seed's heap got
 * sift-up wrong and did not keep FIFO among equal priorities; here the order
 * is total and exact. */
#include "core/internal.h"

static bool before(const weft_task *a, const weft_task *b)
{
	return a->priority_ < b->priority_ || (a->priority_ == b->priority_ && a->seq_ < b->seq_);
}

/* Links two heaps; the larger root becomes the first child of the smaller. */
static weft_task *meld(weft_task *a, weft_task *b)
{
	if (before(b, a)) {
		weft_task *tmp = a;
		a = b;
		b = tmp;
	}
	b->next_ = a->child_;
	a->child_ = b;
	return a;
}

static bool in_buckets(int64_t priority)
{
	return priority >= 0 && priority < WEFT__BUCKETS;
}

static void priority_push(weft__readyq *q, weft_task *t)
{
	t->next_ = NULL;
	if (in_buckets(t->priority_)) {
		int b = (int)t->priority_;
		if (q->bucket_tail[b])
			q->bucket_tail[b]->next_ = t;
		else
			q->bucket_head[b] = t;
		q->bucket_tail[b] = t;
		q->nonempty |= UINT64_C(1) << b;
		return;
	}
	t->child_ = NULL;
	q->root = q->root ? meld(q->root, t) : t;
}

/* Two-pass pairing of a sibling list: meld pairs left to right, stacking the
 * results (reusing next_), then meld the stack back into one heap. */
static weft_task *merge_pairs(weft_task *first)
{
	weft_task *stack = NULL;
	while (first) {
		weft_task *a = first, *b = first->next_;
		if (!b) {
			a->next_ = stack;
			stack = a;
			break;
		}
		first = b->next_;
		a->next_ = NULL;
		b->next_ = NULL;
		weft_task *m = meld(a, b);
		m->next_ = stack;
		stack = m;
	}
	weft_task *heap = NULL;
	while (stack) {
		weft_task *next = stack->next_;
		stack->next_ = NULL;
		heap = heap ? meld(stack, heap) : stack;
		stack = next;
	}
	return heap;
}

static weft_task *priority_pop(weft__readyq *q)
{
	if (q->nonempty && !(q->root && q->root->priority_ < 0)) {
		int b = __builtin_ctzll(q->nonempty);
		weft_task *t = q->bucket_head[b];
		q->bucket_head[b] = t->next_;
		if (!t->next_) {
			q->bucket_tail[b] = NULL;
			q->nonempty &= ~(UINT64_C(1) << b);
		}
		return t;
	}
	weft_task *t = q->root;
	q->root = merge_pairs(t->child_);
	t->child_ = NULL;
	return t;
}

static void priority_unpop(weft__readyq *q, weft_task *t)
{
	if (in_buckets(t->priority_)) {
		int b = (int)t->priority_;
		t->next_ = q->bucket_head[b];
		q->bucket_head[b] = t;
		if (!q->bucket_tail[b])
			q->bucket_tail[b] = t;
		q->nonempty |= UINT64_C(1) << b;
		return;
	}
	t->next_ = NULL;
	t->child_ = NULL;
	q->root = q->root ? meld(q->root, t) : t;
}

const weft__policy_ops weft__policy_priority = {
        .name = "priority",
        .push = priority_push,
        .pop = priority_pop,
        .unpop = priority_unpop,
        .ordered = true,
};
