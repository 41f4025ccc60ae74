/* The name of a function from an address, for the stack-overflow report
 * (src/fiber/stack.c), inside a SIGSEGV handler: async-signal-safe calls
 * only (open, read, fstat, mmap, munmap, close), no allocation, no lock.
 *
 * It reads the ELF symbol table of the file that maps the address: the
 * mapping comes from /proc/self/maps, the symbols from that file's .symtab
 * (the static functions of a program not stripped), else its .dynsym (what
 * a stripped file still exports). dladdr would read only .dynsym (a
 * program's own functions are not there unless linked with -rdynamic) and
 * takes the dynamic loader's lock, which the faulting thread may hold (an
 * overflow during lazy binding): the process would then hang instead of
 * dying. Linux, ELF, 32- and 64-bit as the build is. Does not demangle. */
#ifndef WEFT_SRC_FIBER_SYMBOLIZE_H
#define WEFT_SRC_FIBER_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Copies the name of the function containing addr into name (len bytes,
 * NUL-terminated, cut if longer) and sets *offset to addr's distance from
 * its start: true; false when no symbol table names it. */
bool weft__symbolize(uintptr_t addr, char *name, size_t len, uintptr_t *offset);

#endif
