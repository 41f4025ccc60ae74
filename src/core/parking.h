/* Waiting for a 32-bit word to change, from a kernel thread or a fiber.
 *
 * A kernel thread sleeps on the word with a futex. A fiber must not block
 * its worker, so it parks in a parking lot instead: a small hash table of
 * queues keyed by the word's address (after WebKit's ParkingLot and the
 * kernel's own futex hash), so that the word needs no room for a waiter
 * list and the waker never touches memory the waiter owns. weft_wait and
 * weft_group_wait use it: the finisher of a task may not touch the task
 * after publishing completion, and with this it does not. */
#ifndef WEFT_SRC_CORE_PARKING_H
#define WEFT_SRC_CORE_PARKING_H

#include <stdatomic.h>
#include <stdint.h>

/* Waits while *word == expected; may return spuriously, so callers re-check
 * their condition in a loop. */
void weft__word_wait(_Atomic uint32_t *word, uint32_t expected);

/* Wakes every thread and fiber waiting on word. Like weft__futex_wake it
 * never dereferences word, so word may already be freed. The caller changes
 * *word (with a sequentially consistent read-modify-write) first. */
void weft__word_wake_all(_Atomic uint32_t *word);

#endif
