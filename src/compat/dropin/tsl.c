/* libweft-tsl.a: the seed Thread Support Library's own function names
 * (tsl_init, tsl_create_thread, tsl_yield, tsl_exit, tsl_join, tsl_cancel,
 * tsl_gettid), for a program compiled against its own copy of the seed's
 * tsl.h. Each forwards to weft's (src/compat/tsl.c). Every function takes
 * and returns plain ints, and the seed's header defines no types, so the
 * program's header and weft's agree on the ABI; the constants (TSL_ANY 0,
 * TSL_ERROR -1, TID_MAIN 1, ALG_*) are the seed's in both. See dropin.h. */
#include <weft/compat/tsl.h>

#include "dropin.h"

WEFT_DROPIN int dropin_tsl_init(int salg) WEFT__DROPIN_SYM(tsl_init);
WEFT_DROPIN int dropin_tsl_create_thread(void (*tsf)(void *), void *targ)
        WEFT__DROPIN_SYM(tsl_create_thread);
WEFT_DROPIN int dropin_tsl_yield(int tid) WEFT__DROPIN_SYM(tsl_yield);
WEFT_DROPIN int dropin_tsl_exit(void) WEFT__DROPIN_SYM(tsl_exit);
WEFT_DROPIN int dropin_tsl_join(int tid) WEFT__DROPIN_SYM(tsl_join);
WEFT_DROPIN int dropin_tsl_cancel(int tid) WEFT__DROPIN_SYM(tsl_cancel);
WEFT_DROPIN int dropin_tsl_gettid(void) WEFT__DROPIN_SYM(tsl_gettid);

int dropin_tsl_init(int salg)
{
	return tsl_init(salg);
}

int dropin_tsl_create_thread(void (*tsf)(void *), void *targ)
{
	return tsl_create_thread(tsf, targ);
}

int dropin_tsl_yield(int tid)
{
	return tsl_yield(tid);
}

int dropin_tsl_exit(void)
{
	return tsl_exit();
}

int dropin_tsl_join(int tid)
{
	return tsl_join(tid);
}

int dropin_tsl_cancel(int tid)
{
	return tsl_cancel(tid);
}

int dropin_tsl_gettid(void)
{
	return tsl_gettid();
}
