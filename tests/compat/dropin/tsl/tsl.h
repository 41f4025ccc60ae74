/* The seed's tsl.h as a student's project keeps it (Bilkent CS342 Spring
 * 2024, project 2), rewritten here from its documented interface (seed
 * 003 in the list in docs/seeds/README.md): the
 * constants and the seven prototypes, nothing of weft. The drop-in tests
 * (tests/compat/dropin) copy it next to the seed's app.c and link
 * libweft-tsl.a, as a student who replaces only the library in the
 * Makefile would. */
#ifndef _TSL_H_
#define _TSL_H_

#include <ucontext.h>

#define TSL_MAXTHREADS 256 /* including the main thread */
#define TSL_STACKSIZE  32768

#define ALG_FCFS        1
#define ALG_RANDOM      2
#define ALG_MYALGORITHM 3

#define TID_MAIN    1 /* reserved for the main thread */
#define TSL_ANY     0 /* yield to any ready thread */
#define TSL_ERROR   -1
#define TSL_SUCCESS 0

int tsl_init(int salg);
int tsl_create_thread(void (*tsf)(void *), void *targ);
int tsl_yield(int tid);
int tsl_exit();
int tsl_join(int tid);
int tsl_cancel(int tid);
int tsl_gettid();

#endif
