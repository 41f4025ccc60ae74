/* What the link-level drop-ins (src/compat/dropin/<api>.c) share.
 *
 * libweft exports the seed APIs only as weft_compat_<name> (the compat
 * headers map the seeds' names onto those with asm labels), so that it puts
 * nothing outside its weft_ namespace into a program. A program that keeps
 * its own copy of a seed's header calls the seeds' own names instead:
 * tsl_init, worker_create, sched_post. Each drop-in is one file that
 * defines those names, each forwarding to the weft_compat_ function, and is
 * archived with all of libweft's objects into a self-contained
 * libweft-<api>.a (cmake/WeftCompatLibs.cmake), so that replacing the
 * student library in a Makefile (-ltsl -> -lweft-tsl) is enough.
 *
 * A definition gets the seed's name through an asm label, because the
 * compat header it includes has already bound the C identifier to the
 * weft_compat_ symbol:
 *
 *   WEFT_DROPIN int dropin_tsl_yield(int tid) WEFT__DROPIN_SYM(tsl_yield);
 *   int dropin_tsl_yield(int tid) { return tsl_yield(tid); }
 *
 * These files are not in libweft itself: the glob that makes libweft,
 * src/<layer>/<file>.c, does not reach this directory. */
#ifndef WEFT_COMPAT_DROPIN_H
#define WEFT_COMPAT_DROPIN_H

#include <weft/export.h>

#define WEFT__DROPIN_STR_(x)   #x
#define WEFT__DROPIN_STR(x)    WEFT__DROPIN_STR_(x)
#define WEFT__DROPIN_SYM(name) __asm__(WEFT__DROPIN_STR(__USER_LABEL_PREFIX__) #name)

/* Exported, as the student library's functions were. */
#define WEFT_DROPIN WEFT_EXTERN

#endif
