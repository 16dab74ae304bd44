/*
 * build.c — does a variant's cubin carry the user's machine code? Compares
 * the executable sections (.text.<function>: the SASS) of two builds of a
 * module byte for byte, and says how they differ when they do: which
 * functions, their sizes, how many 16-byte instruction words differ, and
 * the register counts (EIATTR_REGCOUNT in .nv.info). The other build is a
 * cubin, or a fatbin whose ELF entry for the architecture is uncompressed
 * (nvcc 13.0's default compresses only the PTX of a fatbin; -compress-mode=
 * size compresses the code too, and is refused with the way out).
 *
 * Inputs are untrusted files: every offset is checked against the image.
 * Called once per observe on two images of a few MB at most.
 */
#include "argus/collect.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

typedef struct text_sec {
  const char *name; /* ".text.kernel" (borrowed from the image) */
  const unsigned char *bytes;
  size_t size;
  int registers; /* -1: not recorded */
} text_sec;

#define MAX_TEXT 256

/* The .text sections of an ELF image with their register counts; -1 when
 * the image is not a 64-bit ELF with sane section headers. */
static int elf_texts(const unsigned char *d, size_t len, text_sec *out, int max) {
  if (len < sizeof(Elf64_Ehdr) || memcmp(d, ELFMAG, SELFMAG) || d[EI_CLASS] != ELFCLASS64)
    return -1;
  Elf64_Ehdr eh;
  memcpy(&eh, d, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > len ||
      (size_t)eh.e_shnum * sizeof(Elf64_Shdr) > len - eh.e_shoff || eh.e_shstrndx >= eh.e_shnum)
    return -1;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(d + eh.e_shoff);
  const Elf64_Shdr *ss = &sh[eh.e_shstrndx];
  if (ss->sh_offset > len || ss->sh_size > len - ss->sh_offset || ss->sh_size == 0 ||
      d[ss->sh_offset + ss->sh_size - 1] != 0)
    return -1;
  const char *names = (const char *)d + ss->sh_offset;
  int n = 0;
  const Elf64_Shdr *info = NULL;
  for (int i = 0; i < eh.e_shnum; i++) {
    if (sh[i].sh_name >= ss->sh_size)
      return -1;
    if (!strcmp(names + sh[i].sh_name, ".nv.info"))
      info = &sh[i];
  }
  for (int i = 0; i < eh.e_shnum; i++) {
    if (!(sh[i].sh_flags & SHF_EXECINSTR))
      continue;
    if (sh[i].sh_type != SHT_NOBITS &&
        (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset))
      return -1;
    if (n == max)
      return -1;
    out[n].name = names + sh[i].sh_name;
    out[n].bytes = d + sh[i].sh_offset;
    out[n].size = sh[i].sh_type == SHT_NOBITS ? 0 : sh[i].sh_size;
    out[n].registers = -1;
    /* sh_info of a function's .text is its symbol; .nv.info's
     * EIATTR_REGCOUNT (format 4, attribute 0x2f) is {symbol, registers} */
    if (info && info->sh_offset <= len && info->sh_size <= len - info->sh_offset) {
      const unsigned char *p = d + info->sh_offset, *e = p + info->sh_size;
      while (e - p >= 4) {
        unsigned fmt = p[0], attr = p[1], sz = (unsigned)p[2] | (unsigned)p[3] << 8;
        if (fmt != 4) { /* EIFMT_NVAL / BVAL / HVAL: no payload beyond the header */
          p += 4;
          continue;
        }
        if ((size_t)(e - p - 4) < sz)
          break;
        if (attr == 0x2f && sz == 8) {
          uint32_t sym, regs;
          memcpy(&sym, p + 4, 4);
          memcpy(&regs, p + 8, 4);
          if (sym == sh[i].sh_info)
            out[n].registers = (int)regs;
        }
        p += 4 + sz;
      }
    }
    n++;
  }
  return n;
}

/* The ELF entry of a fatbin for sm_<num> (in *elf, *elen), or the reason. */
static int fatbin_elf(const unsigned char *d, size_t len, int num, const unsigned char **elf,
                      size_t *elen, ag_str *why) {
  uint32_t magic;
  memcpy(&magic, d, 4);
  if (magic != 0xBA55ED50u || len < 16) {
    ag_str_printf(why, "neither a cubin (ELF) nor a fatbin");
    return AG_EPARSE;
  }
  uint16_t hsz;
  uint64_t fsz;
  memcpy(&hsz, d + 6, 2);
  memcpy(&fsz, d + 8, 8);
  if (hsz > len || fsz > len - hsz) {
    ag_str_printf(why, "a damaged fatbin (its header says %llu bytes)", (unsigned long long)fsz);
    return AG_EPARSE;
  }
  int arches[32], na = 0, compressed = 0;
  for (size_t at = hsz; at + 0x40 <= (size_t)hsz + fsz;) {
    uint16_t kind;
    uint32_t ehsz, arch, csize;
    uint64_t psz, flags;
    memcpy(&kind, d + at, 2);
    memcpy(&ehsz, d + at + 4, 4);
    memcpy(&psz, d + at + 8, 8);
    memcpy(&csize, d + at + 16, 4);
    memcpy(&arch, d + at + 28, 4);
    memcpy(&flags, d + at + 40, 8);
    if (ehsz < 0x40 || ehsz > len - at || psz > len - at - ehsz)
      break;
    if (kind == 2 && (int)arch == num) {
      if (csize || (flags & 0xa000)) { /* zstd (0x8000) or lz4 (0x2000) */
        compressed = 1;
      } else {
        *elf = d + at + ehsz;
        *elen = psz;
        return 0;
      }
    }
    if (kind == 2 && na < 32)
      arches[na++] = (int)arch;
    at += ehsz + psz;
  }
  if (compressed) {
    ag_str_printf(why, "its sm_%d code is compressed: build it with -compress-mode=none, or "
                       "name the cubin of `nvcc -cubin` (or `cuobjdump -xelf all FILE`)",
                  num);
    return AG_EUNSUPPORTED;
  }
  ag_str_printf(why, "the fatbin has no sm_%d code (it has", num);
  for (int i = 0; i < na; i++)
    ag_str_printf(why, " sm_%d", arches[i]);
  ag_str_printf(why, "%s)", na ? "" : " none");
  return AG_ENOTFOUND;
}

int ag_build_compare(const void *ours, size_t olen, const void *prod, size_t plen,
                     const char *arch, ag_build_cmp *cmp) {
  cmp->identical = 0;
  ag_str_init(&cmp->summary);
  const unsigned char *pe = prod;
  size_t pel = plen;
  int num = arch && !strncmp(arch, "sm_", 3) ? atoi(arch + 3) : 0;
  if (plen >= 4 && memcmp(prod, ELFMAG, SELFMAG) != 0) {
    int rc = fatbin_elf(prod, plen, num, &pe, &pel, &cmp->summary);
    if (rc)
      return rc;
  } else if (plen < 4) {
    ag_str_printf(&cmp->summary, "neither a cubin (ELF) nor a fatbin (%zu bytes)", plen);
    return AG_EPARSE;
  }
  text_sec *a = ag_calloc(2 * MAX_TEXT, sizeof *a), *b = a + MAX_TEXT;
  if (!a)
    return AG_ENOMEM;
  int na = elf_texts(ours, olen, a, MAX_TEXT), nb = elf_texts(pe, pel, b, MAX_TEXT), rc = 0;
  if (na < 0 || nb < 0) {
    ag_str_printf(&cmp->summary, "%s is not a readable cubin", na < 0 ? "the variant" : "it");
    rc = AG_EPARSE;
    goto out;
  }
  int diff = na != nb;
  for (int i = 0; i < na; i++) {
    const text_sec *y = NULL;
    for (int k = 0; k < nb && !y; k++)
      if (!strcmp(a[i].name, b[k].name))
        y = &b[k];
    const char *fn = !strncmp(a[i].name, ".text.", 6) ? a[i].name + 6 : a[i].name;
    if (!y) {
      ag_str_printf(&cmp->summary, "%s'%s' is not in it", cmp->summary.len ? "; " : "", fn);
      diff = 1;
      continue;
    }
    if (a[i].size == y->size && !memcmp(a[i].bytes, y->bytes, a[i].size))
      continue;
    diff = 1;
    size_t words = (a[i].size > y->size ? a[i].size : y->size) / 16, differ = 0;
    for (size_t w = 0; w < words; w++)
      if (w * 16 + 16 > a[i].size || w * 16 + 16 > y->size ||
          memcmp(a[i].bytes + w * 16, y->bytes + w * 16, 16))
        differ++;
    ag_str_printf(&cmp->summary, "%s'%s': ", cmp->summary.len ? "; " : "", fn);
    if (a[i].registers != y->registers)
      ag_str_printf(&cmp->summary, "%d registers against %d, ", a[i].registers, y->registers);
    else
      ag_str_printf(&cmp->summary, "same registers (%d), ", a[i].registers);
    ag_str_printf(&cmp->summary, "%zu against %zu bytes of code, %zu of %zu instruction words "
                                 "differ",
                  a[i].size, y->size, differ, words);
  }
  for (int k = 0; k < nb; k++) {
    int found = 0;
    for (int i = 0; i < na && !found; i++)
      found = !strcmp(a[i].name, b[k].name);
    if (!found) {
      ag_str_printf(&cmp->summary, "%s'%s' is only in it", cmp->summary.len ? "; " : "",
                    !strncmp(b[k].name, ".text.", 6) ? b[k].name + 6 : b[k].name);
      diff = 1;
    }
  }
  cmp->identical = !diff;
  if (!diff)
    ag_str_printf(&cmp->summary, "identical code (%d function%s)", na, na == 1 ? "" : "s");
out:
  ag_free(a);
  if (cmp->summary.oom)
    rc = AG_ENOMEM;
  return rc;
}
