/* A student's thread-worker.h (Rutgers CS416 project 2, Fall 2024
 * skeleton, filled in), rewritten here from its documented interface
 * (seed 004 in the list in docs/seeds/README.md):
 * the skeleton's prototypes and pthread renaming, with a TCB and a
 * worker_mutex_t of the student's own, nothing of weft. Its worker_mutex_t
 * is a few bytes, smaller than weft's mutex, as a student's would be:
 * libweft-worker.a must not write into it. The drop-in tests copy it one
 * level above benchmarks/vector_multiply.c, which includes
 * "../thread-worker.h", and link libweft-worker.a. */
#ifndef WORKER_T_H
#define WORKER_T_H

#define _GNU_SOURCE

/* To use Linux pthread Library in Benchmark, you have to comment the USE_WORKERS macro */
#define USE_WORKERS 1

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <ucontext.h>
#include <unistd.h>

typedef uint worker_t;

typedef struct TCB {
	worker_t id;
	int status;
	ucontext_t context;
	void *stack;
	int priority;
	struct TCB *next;
} tcb;

/* mutex struct definition */
typedef struct worker_mutex_t {
	int locked; /* the student's test-and-set flag */
} worker_mutex_t;

#define NUMPRIO 4

#define HIGH_PRIO    3
#define MEDIUM_PRIO  2
#define DEFAULT_PRIO 1
#define LOW_PRIO     0

int worker_create(worker_t *thread, pthread_attr_t *attr, void *(*function)(void *), void *arg);
int worker_yield();
void worker_exit(void *value_ptr);
int worker_join(worker_t thread, void **value_ptr);
int worker_mutex_init(worker_mutex_t *mutex, const pthread_mutexattr_t *mutexattr);
int worker_mutex_lock(worker_mutex_t *mutex);
int worker_mutex_unlock(worker_mutex_t *mutex);
int worker_mutex_destroy(worker_mutex_t *mutex);
void print_app_stats(void);

#ifdef USE_WORKERS
#define pthread_t             worker_t
#define pthread_mutex_t       worker_mutex_t
#define pthread_create        worker_create
#define pthread_exit          worker_exit
#define pthread_join          worker_join
#define pthread_mutex_init    worker_mutex_init
#define pthread_mutex_lock    worker_mutex_lock
#define pthread_mutex_unlock  worker_mutex_unlock
#define pthread_mutex_destroy worker_mutex_destroy
#define pthread_setschedprio  worker_setschedprio
#endif

#endif
