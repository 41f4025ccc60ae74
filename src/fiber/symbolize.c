/* weft__symbolize (see symbolize.h): /proc/self/maps, then the ELF file's
 * symbol tables, with async-signal-safe calls only. Linux only
 * (WEFT_OS_LINUX): POSIX has no async-signal-safe way to find which file
 * maps an address, so the portable build names no function (the overflow
 * report gives the address alone). A FreeBSD port would read the mappings
 * with sysctl KERN_PROC_VMMAP, a macOS one walk the dyld images. */
#include "fiber/symbolize.h"
#include "core/os.h"

#ifndef WEFT_OS_LINUX
bool weft__symbolize(uintptr_t addr, char *name, size_t len, uintptr_t *offset)
{
	(void)addr, (void)name, (void)len, (void)offset;
	return false;
}
#else
#include <fcntl.h>
#include <link.h> /* ElfW */
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_MAX_LEN 512

/* Parses hex digits at *p (advancing it). */
static uintptr_t hex(const char **p, const char *end)
{
	uintptr_t v = 0;
	for (; *p < end; (*p)++) {
		char c = **p;
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0)
			break;
		v = v * 16 + (uintptr_t)d;
	}
	return v;
}

static void skip_field(const char **p, const char *end)
{
	while (*p < end && **p != ' ')
		(*p)++;
	while (*p < end && **p == ' ')
		(*p)++;
}

/* One line of /proc/self/maps: when its range holds addr and it maps a
 * file, that file's path and the file offset addr is at. */
static bool line_maps(const char *p, const char *end, uintptr_t addr, char *path,
                      uintptr_t *file_off)
{
	uintptr_t start = hex(&p, end);
	if (p >= end || *p != '-')
		return false;
	p++;
	uintptr_t stop = hex(&p, end);
	if (addr < start || addr >= stop)
		return false;
	skip_field(&p, end); /* to perms */
	skip_field(&p, end); /* to offset */
	uintptr_t off = hex(&p, end);
	skip_field(&p, end); /* to dev */
	skip_field(&p, end); /* to inode */
	skip_field(&p, end); /* to path */
	size_t n = (size_t)(end - p);
	if (n == 0 || *p != '/' || n >= PATH_MAX_LEN)
		return false;
	memcpy(path, p, n);
	path[n] = '\0';
	*file_off = off + (addr - start);
	return true;
}

static bool find_mapping(uintptr_t addr, char *path, uintptr_t *file_off)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	char buf[2048];
	size_t have = 0;
	bool found = false;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - have);
		if (r <= 0)
			break;
		have += (size_t)r;
		size_t from = 0;
		for (size_t i = 0; i < have; i++) {
			if (buf[i] != '\n')
				continue;
			if (line_maps(buf + from, buf + i, addr, path, file_off)) {
				found = true;
				break;
			}
			from = i + 1;
		}
		if (found)
			break;
		if (from == 0 && have == sizeof(buf))
			have = 0; /* a line longer than the buffer: not a path we can use */
		else {
			memmove(buf, buf + from, have - from);
			have -= from;
		}
	}
	close(fd);
	return found;
}

/* The address addr has in the file's own terms (what st_value holds),
 * from the PT_LOAD segment that maps file offset off. */
static bool file_vaddr(const unsigned char *m, size_t size, uintptr_t off, uintptr_t *vaddr)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m;
	if (eh->e_phoff == 0 || eh->e_phoff + (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > size)
		return false;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(m + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && off >= ph[i].p_offset &&
		    off < ph[i].p_offset + ph[i].p_filesz) {
			*vaddr = ph[i].p_vaddr + (off - ph[i].p_offset);
			return true;
		}
	return false;
}

/* Looks v up in the section of type `type` (SHT_SYMTAB, SHT_DYNSYM). */
static bool lookup(const unsigned char *m, size_t size, unsigned type, uintptr_t v, char *name,
                   size_t len, uintptr_t *offset)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m;
	if (eh->e_shoff == 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size)
		return false;
	const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(m + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != type || sh[i].sh_link >= eh->e_shnum ||
		    sh[i].sh_entsize != sizeof(ElfW(Sym)) || sh[i].sh_offset + sh[i].sh_size > size)
			continue;
		const ElfW(Shdr) *strs = &sh[sh[i].sh_link];
		if (strs->sh_offset + strs->sh_size > size)
			continue;
		const ElfW(Sym) *sym = (const ElfW(Sym) *)(m + sh[i].sh_offset);
		size_t n = sh[i].sh_size / sizeof(ElfW(Sym));
		const ElfW(Sym) *best = NULL;
		for (size_t k = 0; k < n; k++) {
			unsigned t = ELF64_ST_TYPE(sym[k].st_info);
			if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sym[k].st_shndx == SHN_UNDEF ||
			    sym[k].st_value > v)
				continue;
			if (sym[k].st_size ? v - sym[k].st_value >= sym[k].st_size
			                   : v != sym[k].st_value)
				continue;
			if (!best || sym[k].st_value > best->st_value)
				best = &sym[k];
		}
		if (!best || best->st_name >= strs->sh_size)
			continue;
		const char *s = (const char *)(m + strs->sh_offset + best->st_name);
		size_t max = strs->sh_size - best->st_name, i2 = 0;
		while (i2 + 1 < len && i2 < max && s[i2]) {
			name[i2] = s[i2];
			i2++;
		}
		name[i2] = '\0';
		*offset = v - best->st_value;
		return i2 > 0;
	}
	return false;
}

bool weft__symbolize(uintptr_t addr, char *name, size_t len, uintptr_t *offset)
{
	char path[PATH_MAX_LEN];
	uintptr_t off = 0;
	if (!len || !find_mapping(addr, path, &off))
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	void *map = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(ElfW(Ehdr)))
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return false;
	const unsigned char *m = map;
	size_t size = (size_t)st.st_size;
	bool ok = false;
	uintptr_t v;
	if (memcmp(m, ELFMAG, SELFMAG) == 0 &&
	    m[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
	    file_vaddr(m, size, off, &v))
		ok = lookup(m, size, SHT_SYMTAB, v, name, len, offset) ||
		     lookup(m, size, SHT_DYNSYM, v, name, len, offset);
	munmap(map, size);
	return ok;
}
#endif
