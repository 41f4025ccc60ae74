/* USDT probes (<sys/sdt.h>, systemtap-sdt-dev): a single nop each in the
 * code until a tracer (bpftrace, perf, SystemTap) attaches, so they stay in
 * release builds. Provider `weft`; the probes and their arguments are
 * listed in docs/observability.md. Without <sys/sdt.h> they compile to
 * nothing. */
#ifndef WEFT_SRC_OBS_PROBES_H
#define WEFT_SRC_OBS_PROBES_H

#ifdef WEFT_HAVE_SDT
#include <sys/sdt.h>
#define WEFT__PROBE1(name, a)    STAP_PROBE1(weft, name, a)
#define WEFT__PROBE2(name, a, b) STAP_PROBE2(weft, name, a, b)
#else
#define WEFT__PROBE1(name, a)    ((void)0)
#define WEFT__PROBE2(name, a, b) ((void)0)
#endif

#endif
