/* Policy priority: smallest priority first, post order among equals.
 *
 * The queue is an intrusive pairing heap keyed by (priority, seq), with
 * links in the task itself (child_, and next_ as the sibling link), so posts
 * never allocate and the capacity can be unbounded. A binary heap over an
 * array was rejected: it must be sized in advance or reallocated on post.
 * Insert is O(1); delete-min is the standard two-pass pairing, O(log n)
 * amortised. The seed's heap got sift-up wrong and did not keep FIFO among
 * equal priorities; the seq tie-break makes the order total and exact. */
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

static void priority_push(weft__readyq *q, weft_task *t)
{
	t->child_ = NULL;
	t->next_ = NULL;
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
	weft_task *t = q->root;
	q->root = merge_pairs(t->child_);
	t->child_ = NULL;
	return t;
}

const weft__policy_ops weft__policy_priority = {
        .name = "priority",
        .push = priority_push,
        .pop = priority_pop,
        .batchable = 0,
};
