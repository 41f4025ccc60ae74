/* Forwards to weft's thread-worker API, ../thread-worker.h.
 *
 * The seed's benchmarks live in a benchmarks/ directory below the library's
 * header and write #include "../thread-worker.h". Compiled with
 * -I<weft>/include/weft/compat/benchmarks, that include is looked up as
 * this directory's ../thread-worker.h, weft's header, so the benchmarks
 * build unchanged; this file serves the programs that write
 * #include "thread-worker.h" with the same flag. docs/seeds/compat-worker.md. */
#include "../thread-worker.h"
