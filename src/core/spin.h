/* Busy-wait hint for spin loops: tells the CPU we are spinning so it can
 * save power and give the sibling hyperthread the pipeline. */
#ifndef WEFT_SRC_CORE_SPIN_H
#define WEFT_SRC_CORE_SPIN_H

static inline void weft__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* n pauses: a short wait that leaves the memory bus alone. */
static inline void weft__cpu_relax_n(int n)
{
	for (int i = 0; i < n; i++)
		weft__cpu_relax();
}

#endif
