/*
 * lineinfo.c — a cubin's SASS sections, its function symbols, and the
 * SASS-offset -> PTX-line table of `.nv_debug_line_sass` (argus/sass.h).
 *
 * The ELF is read in place from an owned copy: section headers, the
 * section-name table, `.symtab` (FUNC symbols in executable sections), the
 * executable `.text.<kernel>` sections, and the line program with the
 * relocations of its section (`.rela.nv_debug_line_sass`): each
 * DW_LNE_set_address operand is relocated against a kernel symbol, which
 * names the text section the sequence describes (an unrelocated address is
 * taken as an offset in the only text section, and refused when there are
 * several). The DWARF line program is the standard state machine (DWARF
 * 2-4 headers); rows are kept in program order, with their file (ptxas
 * writes file 0, the PTX itself, also for PTX with .loc, whose source lines
 * go to .debug_line). Every read
 * is bounds-checked: malformed input is AG_EPARSE with a diagnostic. Called once per
 * cubin; linear in its size.
 */
#include "argus/sass.h"

#include <elf.h>
#include <string.h>

typedef struct rd {
  const uint8_t *p, *end;
  int bad;
} rd;

static uint64_t rd_n(rd *r, int n) {
  uint64_t v = 0;
  if (r->end - r->p < n) {
    r->bad = 1;
    r->p = r->end;
    return 0;
  }
  for (int i = 0; i < n; i++)
    v |= (uint64_t)r->p[i] << (8 * i);
  r->p += n;
  return v;
}

static uint64_t rd_uleb(rd *r) {
  uint64_t v = 0;
  for (int s = 0; s < 64; s += 7) {
    if (r->p >= r->end) {
      r->bad = 1;
      return 0;
    }
    uint8_t c = *r->p++;
    v |= (uint64_t)(c & 0x7f) << s;
    if (!(c & 0x80))
      return v;
  }
  r->bad = 1;
  return 0;
}

static int64_t rd_sleb(rd *r) {
  int64_t v = 0;
  for (int s = 0; s < 64; s += 7) {
    if (r->p >= r->end) {
      r->bad = 1;
      return 0;
    }
    uint8_t c = *r->p++;
    v |= (int64_t)((uint64_t)(c & 0x7f) << s);
    if (!(c & 0x80)) {
      if ((c & 0x40) && s + 7 < 64)
        v |= -((int64_t)1 << (s + 7));
      return v;
    }
  }
  r->bad = 1;
  return 0;
}

typedef struct cx {
  ag_sass_cubin *c;
  const char *name;
  ag_diags *diags;
  const Elf64_Shdr *sh;
  int nsh;
  int *text_of_sec; /* section index -> texts index or -1 */
  const Elf64_Sym *syms;
  size_t nsyms;
  const char *symstr;
  size_t symstr_len;
} cx;

static int bad(cx *x, const char *fmt, ...) AG_PRINTF(2, 3);
static int bad(cx *x, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ag_diags_add(x->diags, AG_SEV_ERROR, x->name, 0, 0, NULL, 0, "%s", msg);
  return AG_EPARSE;
}

/* a section's bytes, or NULL when they lie outside the image */
static const uint8_t *sec_bytes(const cx *x, int i) {
  const Elf64_Shdr *s = &x->sh[i];
  if (s->sh_type == SHT_NOBITS || s->sh_offset > x->c->len ||
      s->sh_size > x->c->len - s->sh_offset)
    return NULL;
  return (const uint8_t *)x->c->data + s->sh_offset;
}

/* the relocated value of the 8-byte field at offset `at` of section `sec`:
 * *text is the text section its symbol lies in (-1 when unrelocated) */
static int relocate(cx *x, int sec, uint64_t at, uint64_t raw, uint64_t *addr, int *text) {
  *addr = raw;
  *text = -1;
  for (int i = 0; i < x->nsh; i++) {
    const Elf64_Shdr *s = &x->sh[i];
    if ((s->sh_type != SHT_RELA && s->sh_type != SHT_REL) || (int)s->sh_info != sec)
      continue;
    size_t ent = s->sh_type == SHT_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
    const uint8_t *b = sec_bytes(x, i);
    if (!b)
      return bad(x, "relocation section %d lies outside the file", i);
    for (uint64_t k = 0; k + ent <= s->sh_size; k += ent) {
      Elf64_Rela r;
      memset(&r, 0, sizeof r);
      memcpy(&r, b + k, ent);
      if (r.r_offset != at)
        continue;
      uint64_t si = ELF64_R_SYM(r.r_info);
      if (!x->syms || si >= x->nsyms)
        return bad(x, "line-program relocation names symbol %llu, which does not exist",
                   (unsigned long long)si);
      const Elf64_Sym *sym = &x->syms[si];
      if (sym->st_shndx >= x->nsh || x->text_of_sec[sym->st_shndx] < 0)
        return bad(x, "line-program relocation names a symbol outside the code sections");
      *text = x->text_of_sec[sym->st_shndx];
      *addr = sym->st_value + (uint64_t)(s->sh_type == SHT_RELA ? r.r_addend : (int64_t)raw);
      return 0;
    }
  }
  return 0;
}

static int push_row(ag_sass_cubin *c, int *cap, ag_sass_row row) {
  if (c->nrows == *cap) {
    int nc = *cap ? *cap * 2 : 256;
    ag_sass_row *v = ag_realloc(c->rows, sizeof *v * (size_t)nc);
    if (!v)
      return AG_ENOMEM;
    c->rows = v;
    *cap = nc;
  }
  c->rows[c->nrows++] = row;
  return 0;
}

static int line_program(cx *x, int sec) {
  const uint8_t *base = sec_bytes(x, sec);
  if (!base)
    return bad(x, "section '.nv_debug_line_sass' lies outside the file");
  rd all = {base, base + x->sh[sec].sh_size, 0};
  int cap = 0, rc = 0;
  while (all.p < all.end) {
    const uint8_t *unit = all.p;
    uint64_t ulen = rd_n(&all, 4);
    if (ulen == 0xffffffffu)
      return bad(x, "'.nv_debug_line_sass' at offset %ld: 64-bit DWARF is not supported",
                 (long)(unit - base));
    if (all.bad || ulen > (uint64_t)(all.end - all.p))
      return bad(x, "'.nv_debug_line_sass' at offset %ld: unit length %llu runs past the "
                    "section",
                 (long)(unit - base), (unsigned long long)ulen);
    rd r = {all.p, all.p + ulen, 0};
    all.p += ulen;
    int ver = (int)rd_n(&r, 2);
    uint64_t hlen = rd_n(&r, 4);
    const uint8_t *prog = r.p + hlen;
    int min_inst = (int)rd_n(&r, 1);
    if (ver >= 4)
      rd_n(&r, 1); /* maximum operations per instruction */
    rd_n(&r, 1);   /* default_is_stmt */
    int line_base = (int8_t)rd_n(&r, 1);
    int line_range = (int)rd_n(&r, 1);
    int op_base = (int)rd_n(&r, 1);
    if (r.bad || ver < 2 || ver > 4 || line_range == 0 || op_base == 0 || hlen > ulen)
      return bad(x, "'.nv_debug_line_sass' at offset %ld: unsupported or malformed line "
                    "program header (version %d)",
                 (long)(unit - base), ver);
    uint8_t std_len[256] = {0};
    for (int i = 1; i < op_base; i++)
      std_len[i] = (uint8_t)rd_n(&r, 1);
    r.p = prog; /* directory and file names are not needed: file 0 is the PTX */
    uint64_t addr = 0;
    int text = -1, line = 1, file = 1; /* DWARF's initial file register */
    while (r.p < r.end && !r.bad && !rc) {
      int op = (int)rd_n(&r, 1);
      if (op >= op_base) {
        int a = op - op_base;
        addr += (uint64_t)(a / line_range) * (uint64_t)min_inst;
        line += line_base + a % line_range;
        rc = push_row(x->c, &cap, (ag_sass_row){text, addr, line, file, 0});
      } else if (op == 0) {
        uint64_t n = rd_uleb(&r);
        if (r.bad || n == 0 || n > (uint64_t)(r.end - r.p)) {
          r.bad = 1;
          break;
        }
        const uint8_t *next = r.p + n;
        int sub = (int)rd_n(&r, 1);
        if (sub == 1) { /* end_sequence */
          rc = push_row(x->c, &cap, (ag_sass_row){text, addr, line, file, 1});
          addr = 0, line = 1, text = -1, file = 1;
        } else if (sub == 2 && n == 9) { /* set_address */
          uint64_t at = (uint64_t)(r.p - base);
          uint64_t raw = rd_n(&r, 8);
          if ((rc = relocate(x, sec, at, raw, &addr, &text)))
            return rc;
          if (text < 0) {
            if (x->c->ntexts != 1)
              return bad(x, "'.nv_debug_line_sass' at offset %llu: an address without a "
                            "relocation, and %d code sections to choose from",
                         (unsigned long long)at, x->c->ntexts);
            text = 0;
          }
        }
        r.p = next;
      } else if (op == 1) { /* copy */
        rc = push_row(x->c, &cap, (ag_sass_row){text, addr, line, file, 0});
      } else if (op == 2) {
        addr += rd_uleb(&r) * (uint64_t)min_inst;
      } else if (op == 3) {
        line += (int)rd_sleb(&r);
      } else if (op == 4) {
        file = (int)rd_uleb(&r);
      } else if (op == 8) { /* const_add_pc */
        addr += (uint64_t)((255 - op_base) / line_range) * (uint64_t)min_inst;
      } else if (op == 9) {
        addr += rd_n(&r, 2);
      } else {
        for (int k = 0; k < std_len[op]; k++) /* set_file, set_column, ...: skipped */
          rd_uleb(&r);
      }
      if (!r.bad && !rc && text < 0 && x->c->nrows && x->c->rows[x->c->nrows - 1].text < 0)
        return bad(x, "'.nv_debug_line_sass' at offset %ld: a row before any "
                      "DW_LNE_set_address",
                   (long)(r.p - base));
    }
    if (rc)
      return rc;
    if (r.bad)
      return bad(x, "'.nv_debug_line_sass' at offset %ld: the line program is truncated",
                 (long)(r.p - base));
  }
  return 0;
}

static int parse(cx *x) {
  ag_sass_cubin *c = x->c;
  const uint8_t *d = (const uint8_t *)c->data;
  if (c->len < sizeof(Elf64_Ehdr) || memcmp(d, ELFMAG, SELFMAG) || d[EI_CLASS] != ELFCLASS64 ||
      d[EI_DATA] != ELFDATA2LSB)
    return bad(x, "not a 64-bit little-endian ELF file (a cubin): compile with ptxas or "
                  "nvcc -cubin");
  Elf64_Ehdr eh;
  memcpy(&eh, d, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > c->len ||
      (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > c->len - eh.e_shoff ||
      eh.e_shstrndx >= eh.e_shnum)
    return bad(x, "the ELF section headers lie outside the file (%zu bytes)", c->len);
  /* the SM: bits 8-15 of e_flags since CUDA's ELF ABI version 8, bits 0-7 before */
  c->sm = (int)(d[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff);
  x->sh = (const Elf64_Shdr *)(d + eh.e_shoff); /* ELF64 headers are 8-aligned */
  x->nsh = eh.e_shnum;
  if ((uintptr_t)x->sh % 8)
    return bad(x, "misaligned ELF section headers");
  const uint8_t *names = sec_bytes(x, eh.e_shstrndx);
  uint64_t names_len = x->sh[eh.e_shstrndx].sh_size;
  if (!names)
    return bad(x, "the section-name table lies outside the file");
  x->text_of_sec = ag_malloc(sizeof(int) * (size_t)x->nsh);
  c->texts = ag_calloc((size_t)x->nsh, sizeof *c->texts);
  if (!x->text_of_sec || !c->texts)
    return AG_ENOMEM;
  int line_sec = -1;
  for (int i = 0; i < x->nsh; i++) {
    const Elf64_Shdr *s = &x->sh[i];
    x->text_of_sec[i] = -1;
    if (s->sh_name >= names_len || !memchr(names + s->sh_name, 0, names_len - s->sh_name))
      return bad(x, "section %d has a name outside the section-name table", i);
    const char *nm = (const char *)names + s->sh_name;
    if (!strcmp(nm, ".nv_debug_line_sass"))
      line_sec = i;
    if (s->sh_type == SHT_SYMTAB && s->sh_link < (uint32_t)x->nsh) {
      const uint8_t *b = sec_bytes(x, i), *sb = sec_bytes(x, (int)s->sh_link);
      if (!b || !sb || (uintptr_t)b % 8)
        return bad(x, "the symbol table lies outside the file");
      x->syms = (const Elf64_Sym *)b;
      x->nsyms = s->sh_size / sizeof(Elf64_Sym);
      x->symstr = (const char *)sb;
      x->symstr_len = x->sh[s->sh_link].sh_size;
    }
    if ((s->sh_flags & SHF_EXECINSTR) && !strncmp(nm, ".text.", 6)) {
      const uint8_t *b = sec_bytes(x, i);
      if (!b)
        return bad(x, "code section '%s' lies outside the file", nm);
      ag_sass_text *t = &c->texts[c->ntexts];
      if (!(t->kernel = ag_strdup(nm + 6)))
        return AG_ENOMEM;
      t->bytes = b;
      t->size = s->sh_size;
      x->text_of_sec[i] = c->ntexts++;
    }
  }
  /* functions */
  if (x->syms) {
    c->funcs = ag_calloc(x->nsyms + 1, sizeof *c->funcs);
    if (!c->funcs)
      return AG_ENOMEM;
    for (size_t k = 0; k < x->nsyms; k++) {
      const Elf64_Sym *s = &x->syms[k];
      if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx >= x->nsh ||
          x->text_of_sec[s->st_shndx] < 0)
        continue;
      if (s->st_name >= x->symstr_len ||
          !memchr(x->symstr + s->st_name, 0, x->symstr_len - s->st_name))
        return bad(x, "symbol %zu has a name outside the string table", k);
      ag_sass_sym *f = &c->funcs[c->nfuncs];
      if (!(f->name = ag_strdup(x->symstr + s->st_name)))
        return AG_ENOMEM;
      f->text = x->text_of_sec[s->st_shndx];
      f->offset = s->st_value;
      f->size = s->st_size;
      c->nfuncs++;
    }
  }
  c->has_lineinfo = line_sec >= 0;
  return line_sec >= 0 ? line_program(x, line_sec) : 0;
}

int ag_sass_cubin_parse(const void *data, size_t len, const char *name, ag_diags *diags,
                   ag_sass_cubin **out) {
  *out = NULL;
  ag_sass_cubin *c = ag_calloc(1, sizeof *c);
  if (!c)
    return AG_ENOMEM;
  /* an 8-aligned copy: the headers and symbols are read in place */
  c->data = ag_malloc(len ? len : 1);
  if (!c->data) {
    ag_free(c);
    return AG_ENOMEM;
  }
  memcpy(c->data, data, len);
  c->len = len;
  cx x = {c, name ? name : "cubin", diags, NULL, 0, NULL, NULL, 0, NULL, 0};
  int rc = parse(&x);
  ag_free(x.text_of_sec);
  if (rc) {
    ag_sass_cubin_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int ag_sass_cubin_load(const char *path, ag_diags *diags, ag_sass_cubin **out) {
  char *data = NULL;
  size_t len = 0;
  *out = NULL;
  int rc = ag_file_read(path, &data, &len);
  if (rc) {
    ag_diags_add(diags, AG_SEV_ERROR, path, 0, 0, NULL, 0, "cannot read cubin '%s': %s", path,
                 ag_strerror(rc));
    return rc;
  }
  rc = ag_sass_cubin_parse(data, len, path, diags, out);
  ag_free(data);
  return rc;
}

void ag_sass_cubin_free(ag_sass_cubin *c) {
  if (!c)
    return;
  for (int i = 0; i < c->ntexts; i++)
    ag_free(c->texts[i].kernel);
  for (int i = 0; i < c->nfuncs; i++)
    ag_free(c->funcs[i].name);
  ag_free(c->texts);
  ag_free(c->funcs);
  ag_free(c->rows);
  ag_free(c->data);
  ag_free(c);
}

int ag_sass_cubin_text(const ag_sass_cubin *c, const char *kernel) {
  for (int i = 0; i < c->ntexts; i++)
    if (!strcmp(c->texts[i].kernel, kernel))
      return i;
  return -1;
}

int ag_sass_cubin_pc_line(const ag_sass_cubin *c, int text, uint64_t pc, int *line) {
  *line = 0;
  const ag_sass_row *best = NULL;
  for (int i = 0; i < c->nrows; i++) {
    const ag_sass_row *r = &c->rows[i];
    if (r->text != text || r->pc > pc)
      continue;
    /* a row at or before pc; it covers pc when the row after it (same
     * sequence) starts past pc */
    const ag_sass_row *n = i + 1 < c->nrows ? &c->rows[i + 1] : NULL;
    if (r->end_seq)
      continue;
    if (n && n->text == text && n->pc <= pc)
      continue;
    if (!n || n->text != text)
      continue; /* a sequence without its end row covers nothing for sure */
    best = r;
  }
  if (!best || best->file != 0)
    return AG_ENOTFOUND;
  *line = best->line;
  return 0;
}

int ag_sass_cubin_pc_func(const ag_sass_cubin *c, int text, uint64_t pc) {
  for (int i = 0; i < c->nfuncs; i++)
    if (c->funcs[i].text == text && pc >= c->funcs[i].offset &&
        pc < c->funcs[i].offset + c->funcs[i].size)
      return i;
  return -1;
}

int ag_sass_cubin_section_pc(const ag_sass_cubin *c, const char *kernel, const char *function,
                        uint64_t pc_offset, uint64_t *pc) {
  *pc = 0;
  int t = ag_sass_cubin_text(c, kernel);
  if (t < 0)
    return AG_ENOTFOUND;
  size_t kl = strlen(kernel);
  for (int i = 0; i < c->nfuncs; i++) {
    const ag_sass_sym *f = &c->funcs[i];
    const char *n = f->name;
    int match = f->text == t &&
                (!strcmp(n, function) || (n[0] == '$' && !strncmp(n + 1, kernel, kl) &&
                                           n[1 + kl] == '$' && !strcmp(n + 2 + kl, function)));
    if (!match)
      continue;
    if (pc_offset >= f->size)
      return AG_ENOTFOUND;
    *pc = f->offset + pc_offset;
    return 0;
  }
  return AG_ENOTFOUND;
}
