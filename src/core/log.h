/* weft__log: every message weft says goes through here (core/log.c), to the
 * program's hook (weft_set_log) or to stderr. core/internal.h includes it;
 * lower layers (fiber contexts, obs/) include it alone. */
#ifndef WEFT_CORE_LOG_H
#define WEFT_CORE_LOG_H

#include <weft/log.h>

/* Says one message, a printf format like "weft: ...\n", through the log
 * hook or on stderr; level is a weft_log_level. The hook gets it without
 * the "weft: " prefix and the final newline. Not async-signal-safe. */
void weft__log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
