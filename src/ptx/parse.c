/*
 * parse.c — the PTX parser: source text to a lossless statement list.
 *
 * Invariant: the statements' (lead, text) spans, in list order, followed by
 * the module's trailing whitespace, concatenate to the input exactly. The
 * parser is a single forward pass with no backtracking beyond one token; it
 * stops at the first error with a diagnostic (file:line:col and the source
 * line). Every loop advances the cursor, so no input can make it hang.
 * Expected load: a 200,000-line module in a few tens of milliseconds; called
 * once per program version and once per inserted snippet.
 */
#include "ptx_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct ps {
  ag_ptx_module *m;
  ag_diags *diags;
  const char *src, *p, *end;
  const char *ls; /* start of the current line */
  int line;
  int err;        /* first error code, 0 if none */
  ag_ptx_func *func;
  int depth;
  AG_VEC(ag_ptx_operand) scratch[8]; /* per operand nesting level */
  int level;
} ps;

/* ------------------------------------------------------------- helpers */

static int fail_at(ps *s, const char *at, const char *fmt, ...) AG_PRINTF(3, 4);
static int fail_at(ps *s, const char *at, const char *fmt, ...) {
  if (s->err)
    return s->err;
  /* locate line and column of `at`: from the current line when at is on or
   * after it, else from the start */
  int line = s->line;
  const char *ls = s->ls;
  if (at < ls) {
    line = 1;
    ls = s->src;
  }
  for (const char *q = ls; q < at; q++)
    if (*q == '\n') {
      line++;
      ls = q + 1;
    }
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int col = (int)(at - ls) + 1;
  if (ag_diags_add(s->diags, AG_SEV_ERROR, s->m->path, line, col, ls,
                   (size_t)(s->end - ls), "%s", msg))
    return s->err = AG_ENOMEM;
  return s->err = AG_EPARSE;
}

static int oom(ps *s) {
  if (!s->err)
    s->err = AG_ENOMEM;
  return s->err;
}

static void newline_at(ps *s, const char *q) {
  s->line++;
  s->ls = q + 1;
}

/* Moves the cursor back to q (q <= s->p), keeping line and ls right. */
static void rewind_to(ps *s, const char *q) {
  for (const char *r = q; r < s->p; r++)
    if (*r == '\n')
      s->line--;
  s->p = q;
  const char *l = q;
  while (l > s->src && l[-1] != '\n')
    l--;
  s->ls = l;
}

/* Skips spaces, tabs, CR and newlines. */
static void skip_ws(ps *s) {
  const char *p = s->p;
  while (p < s->end) {
    char c = *p;
    if (c == '\n')
      newline_at(s, p);
    else if (c != ' ' && c != '\t' && c != '\r' && c != '\f' && c != '\v')
      break;
    p++;
  }
  s->p = p;
}

/* Skips a block comment at s->p. */
static int skip_block_comment(ps *s) {
  const char *start = s->p;
  s->p += 2;
  for (;;) {
    if (s->p + 1 >= s->end) {
      s->p = s->end;
      return fail_at(s, start, "unterminated block comment");
    }
    if (s->p[0] == '*' && s->p[1] == '/') {
      s->p += 2;
      return 0;
    }
    if (*s->p == '\n')
      newline_at(s, s->p);
    s->p++;
  }
}

/* Skips whitespace and comments (inside a statement). */
static int skip_ws_c(ps *s) {
  for (;;) {
    skip_ws(s);
    if (s->p + 1 < s->end && s->p[0] == '/' && s->p[1] == '/') {
      while (s->p < s->end && *s->p != '\n')
        s->p++;
    } else if (s->p + 1 < s->end && s->p[0] == '/' && s->p[1] == '*') {
      if (skip_block_comment(s))
        return s->err;
    } else {
      return 0;
    }
  }
}

/* Skips blanks on the current line only. */
static void skip_blank(ps *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r'))
    s->p++;
}

static int is_id_start(char c) {
  return isalpha((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.';
}
static int is_id_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
}

/* An identifier or directive: [.%$_a-zA-Z][a-zA-Z0-9_$.]*, also taking
 * "::" pairs (shared::cta, mbarrier::complete_tx::bytes). Returns length. */
static size_t scan_ident(const char *p, const char *end) {
  const char *q = p;
  if (q < end && is_id_start(*q))
    q++;
  else
    return 0;
  for (;;) {
    if (q < end && is_id_char(*q))
      q++;
    else if (q + 2 < end && q[0] == ':' && q[1] == ':' && is_id_char(q[2]))
      q += 2;
    else
      break;
  }
  return (size_t)(q - p);
}

static int span_is(const char *p, size_t n, const char *lit) {
  size_t l = strlen(lit);
  return n == l && memcmp(p, lit, n) == 0;
}

static char *dup(ps *s, const char *p, size_t n) {
  char *r = ag_arena_strndup(&s->m->arena, p, n);
  if (!r)
    oom(s);
  return r;
}

static ag_ptx_stmt *new_stmt(ps *s, ag_ptx_kind k, const char *lead, const char *start) {
  ag_ptx_stmt *st = ag_arena_alloc(&s->m->arena, sizeof *st);
  if (!st) {
    oom(s);
    return NULL;
  }
  st->kind = k;
  st->lead = lead;
  st->lead_len = (uint32_t)(start - lead);
  st->text = start;
  st->line = s->line;
  st->col = (int)(start - s->ls) + 1;
  st->depth = s->depth;
  st->func = s->func;
  st->block = -1;
  return st;
}

static void finish(ps *s, ag_ptx_stmt *st, const char *end) {
  st->text_len = (uint32_t)(end - st->text);
  st->prev = s->m->last;
  if (s->m->last)
    s->m->last->next = st;
  else
    s->m->first = st;
  s->m->last = st;
}

/* ----------------------------------------------------------- numbers */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Scans a numeric literal at p. Sets *kind (INT/FLOAT) and the value.
 * Returns its length, or 0 with an error recorded. */
static size_t scan_number(ps *s, const char *p, ag_ptx_opnd_kind *kind, int64_t *iv,
                          double *fv) {
  const char *q = p, *end = s->end;
  if (q + 1 < end && q[0] == '0' && (q[1] == 'f' || q[1] == 'F' || q[1] == 'd' || q[1] == 'D')) {
    int nd = (q[1] == 'f' || q[1] == 'F') ? 8 : 16;
    uint64_t bits = 0;
    q += 2;
    int i = 0;
    for (; i < nd && q < end && hexval(*q) >= 0; i++, q++)
      bits = bits << 4 | (uint64_t)hexval(*q);
    if (i != nd || (q < end && is_id_char(*q))) {
      fail_at(s, p, "malformed %s literal: expected %d hex digits after '0%c'",
              nd == 8 ? "single-precision" : "double-precision", nd, p[1]);
      return 0;
    }
    *kind = AG_PTX_OP_FLOAT;
    if (nd == 8) {
      uint32_t b32 = (uint32_t)bits;
      float f;
      memcpy(&f, &b32, 4);
      *fv = f;
    } else {
      memcpy(fv, &bits, 8);
    }
    return (size_t)(q - p);
  }
  if (q + 1 < end && q[0] == '0' && (q[1] == 'x' || q[1] == 'X')) {
    uint64_t v = 0;
    q += 2;
    const char *d = q;
    while (q < end && hexval(*q) >= 0)
      v = v << 4 | (uint64_t)hexval(*q++);
    if (q == d) {
      fail_at(s, p, "malformed hexadecimal literal");
      return 0;
    }
    if (q < end && *q == 'U')
      q++;
    if (q < end && is_id_char(*q)) {
      fail_at(s, p, "malformed hexadecimal literal");
      return 0;
    }
    *kind = AG_PTX_OP_INT;
    *iv = (int64_t)v;
    return (size_t)(q - p);
  }
  if (q + 1 < end && q[0] == '0' && (q[1] == 'b' || q[1] == 'B')) {
    uint64_t v = 0;
    q += 2;
    const char *d = q;
    while (q < end && (*q == '0' || *q == '1'))
      v = v << 1 | (uint64_t)(*q++ - '0');
    if (q == d || (q < end && is_id_char(*q) && *q != 'U')) {
      fail_at(s, p, "malformed binary literal");
      return 0;
    }
    if (q < end && *q == 'U')
      q++;
    *kind = AG_PTX_OP_INT;
    *iv = (int64_t)v;
    return (size_t)(q - p);
  }
  int isfloat = 0;
  while (q < end && isdigit((unsigned char)*q))
    q++;
  if (q < end && *q == '.') {
    isfloat = 1;
    q++;
    while (q < end && isdigit((unsigned char)*q))
      q++;
  }
  if (q < end && (*q == 'e' || *q == 'E')) {
    const char *e = q + 1;
    if (e < end && (*e == '+' || *e == '-'))
      e++;
    if (e < end && isdigit((unsigned char)*e)) {
      isfloat = 1;
      q = e;
      while (q < end && isdigit((unsigned char)*q))
        q++;
    }
  }
  if (!isfloat && q < end && *q == 'U')
    q++;
  if (q == p || (q < end && is_id_char(*q) && *q != '.')) {
    fail_at(s, p, "malformed number");
    return 0;
  }
  if (isfloat) {
    char buf[64];
    size_t n = (size_t)(q - p) < sizeof buf - 1 ? (size_t)(q - p) : sizeof buf - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    *kind = AG_PTX_OP_FLOAT;
    *fv = strtod(buf, NULL);
  } else {
    uint64_t v = 0;
    int octal = p[0] == '0' && q - p > 1;
    for (const char *d = p; d < q && isdigit((unsigned char)*d); d++)
      v = octal ? v * 8 + (uint64_t)(*d - '0') : v * 10 + (uint64_t)(*d - '0');
    *kind = AG_PTX_OP_INT;
    *iv = (int64_t)v;
  }
  return (size_t)(q - p);
}

/* ----------------------------------------------------------- operands */

static int parse_operand(ps *s, ag_ptx_operand *o);

/* Parses comma-separated operands into scratch level lv. With close != 0
 * the list ends at `close` (consumed; open_at locates the error); with
 * close == 0 it ends before the first character that is not a comma after an
 * operand (an instruction's list). */
static int parse_list(ps *s, int lv, char close, const char *open_at) {
  s->scratch[lv].n = 0;
  if (skip_ws_c(s))
    return s->err;
  if (s->p < s->end && *s->p == (close ? close : ';')) {
    s->p += close != 0;
    return 0;
  }
  for (;;) {
    ag_ptx_operand e;
    if (parse_operand(s, &e))
      return s->err;
    if (ag_vec_push(&s->scratch[lv], e))
      return oom(s);
    if (skip_ws_c(s))
      return s->err;
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      if (skip_ws_c(s))
        return s->err;
      continue;
    }
    if (!close)
      return 0;
    if (s->p < s->end && *s->p == close) {
      s->p++;
      return 0;
    }
    if (s->p >= s->end || *s->p == ';')
      return fail_at(s, open_at, "unclosed '%c': expected '%c'",
                     close == ']' ? '[' : close == '}' ? '{' : '(', close);
    return fail_at(s, s->p, "expected ',' or '%c' in operand list", close);
  }
}

/* Copies scratch level lv into an arena array. */
static int take_list(ps *s, int lv, ag_ptx_operand **out, int *n) {
  *n = (int)s->scratch[lv].n;
  if (!*n)
    return 0;
  *out = ag_arena_alloc(&s->m->arena, sizeof **out * (size_t)*n);
  if (!*out)
    return oom(s);
  memcpy(*out, s->scratch[lv].v, sizeof **out * (size_t)*n);
  return 0;
}

/* A bracketed group; the opening bracket has been consumed. */
static int parse_group(ps *s, ag_ptx_operand *o, char close, const char *open_at) {
  if (s->level >= 7)
    return fail_at(s, open_at, "operands nested too deeply");
  int lv = ++s->level;
  if (!parse_list(s, lv, close, open_at))
    take_list(s, lv, &o->sub, &o->nsub);
  s->level--;
  return s->err;
}

/* One primary: [!|-|~]* (ident | number | _). Returns 0 and sets kind. */
static int parse_primary(ps *s, ag_ptx_operand *o, int *nterms) {
  while (s->p < s->end && (*s->p == '!' || *s->p == '-' || *s->p == '~')) {
    if (*s->p == '!')
      o->neg = 1;
    s->p++;
    skip_blank(s);
  }
  if (s->p >= s->end)
    return fail_at(s, s->p, "expected an operand at end of input");
  char c = *s->p;
  if (isdigit((unsigned char)c)) {
    ag_ptx_opnd_kind k;
    size_t n = scan_number(s, s->p, &k, &o->ival, &o->fval);
    if (!n)
      return s->err;
    o->kind = k;
    s->p += n;
  } else if (is_id_start(c)) {
    size_t n = scan_ident(s->p, s->end);
    if (n == 1 && c == '_')
      o->kind = AG_PTX_OP_SINK;
    else
      o->kind = c == '%' ? AG_PTX_OP_REG : AG_PTX_OP_SYM;
    if (!(o->base = dup(s, s->p, n)))
      return s->err;
    s->p += n;
  } else if (c == '(') {
    /* parenthesized sub-expression inside an expression */
    const char *at = s->p++;
    ag_ptx_operand inner;
    memset(&inner, 0, sizeof inner);
    if (parse_group(s, &inner, ')', at))
      return s->err;
    o->kind = AG_PTX_OP_EXPR;
  } else {
    return fail_at(s, s->p, "unexpected '%c' in operand", c);
  }
  (*nterms)++;
  return 0;
}

static int parse_operand(ps *s, ag_ptx_operand *o) {
  memset(o, 0, sizeof *o);
  const char *start = s->p;
  if (s->p >= s->end)
    return fail_at(s, s->p, "expected an operand at end of input");
  char c = *s->p;
  if (c == '[' || c == '{' || (c == '(')) {
    char close = c == '[' ? ']' : c == '{' ? '}' : ')';
    s->p++;
    if (parse_group(s, o, close, start))
      return s->err;
    o->kind = c == '[' ? AG_PTX_OP_ADDR : c == '{' ? AG_PTX_OP_VEC : AG_PTX_OP_LIST;
    if (c == '[' && o->nsub == 1) {
      /* [reg], [sym], [reg+imm], [sym+imm], [imm] */
      ag_ptx_operand *e = &o->sub[0];
      if (e->kind == AG_PTX_OP_REG || e->kind == AG_PTX_OP_SYM) {
        o->base = e->base;
      } else if (e->kind == AG_PTX_OP_INT) {
        o->ival = e->ival;
      } else if (e->kind == AG_PTX_OP_EXPR) {
        o->base = e->base;
        o->ival = e->ival;
      }
    }
  } else {
    int nterms = 0;
    if (parse_primary(s, o, &nterms))
      return s->err;
    const char *first_base = o->base;
    ag_ptx_opnd_kind k1 = o->kind;
    int neg_first = start < s->p && *start == '-';
    int64_t off = 0;
    int offok = 1;
    /* binary operators continue the expression */
    for (;;) {
      const char *save = s->p;
      skip_blank(s);
      if (s->p < s->end && (*s->p == '+' || *s->p == '-' || *s->p == '|' || *s->p == '*' ||
                            *s->p == '&' || *s->p == '^' || *s->p == '/' ||
                            ((*s->p == '<' || *s->p == '>') && s->p + 1 < s->end &&
                             s->p[1] == *s->p))) {
        char op = *s->p;
        s->p += (op == '<' || op == '>') ? 2 : 1;
        skip_blank(s);
        ag_ptx_operand t;
        memset(&t, 0, sizeof t);
        int negt = s->p < s->end && *s->p == '-';
        if (parse_primary(s, &t, &nterms))
          return s->err;
        if (op == '+' || op == '-') {
          if (t.kind == AG_PTX_OP_INT)
            off += ((op == '-') != negt) ? -t.ival : t.ival;
          else
            offok = 0;
        } else {
          offok = 0;
        }
      } else {
        s->p = save;
        break;
      }
    }
    if (nterms > 1) {
      o->kind = AG_PTX_OP_EXPR;
      if (offok && (k1 == AG_PTX_OP_REG || k1 == AG_PTX_OP_SYM) && !neg_first) {
        o->base = first_base;
        o->ival = off;
      } else {
        o->base = NULL;
        o->ival = 0;
      }
    } else if (neg_first && o->kind == AG_PTX_OP_INT) {
      o->ival = -o->ival;
    } else if (neg_first && o->kind == AG_PTX_OP_FLOAT) {
      o->fval = -o->fval;
    }
  }
  if (!(o->text = dup(s, start, (size_t)(s->p - start))))
    return s->err;
  return 0;
}

/* ----------------------------------------------------------- statements */

/* Instruction: [@[!]pred] opcode operands ; — s->p at '@' or the opcode. */
static int parse_instr(ps *s, ag_ptx_stmt *st) {
  if (*s->p == '@') {
    s->p++; /* the predicate follows '@' or '@!' directly */
    if (s->p < s->end && *s->p == '!') {
      st->guard_neg = 1;
      s->p++;
    }
    size_t n = scan_ident(s->p, s->end);
    if (!n)
      return fail_at(s, s->p, "expected a predicate register after '@'");
    if (!(st->guard = dup(s, s->p, n)))
      return s->err;
    s->p += n;
    if (skip_ws_c(s))
      return s->err;
  }
  size_t n = scan_ident(s->p, s->end);
  if (!n || *s->p == '%' || *s->p == '.')
    return fail_at(s, s->p, "expected an instruction opcode");
  if (!(st->opcode = dup(s, s->p, n)))
    return s->err;
  s->p += n;
  if (skip_ws_c(s))
    return s->err;
  if (s->level >= 7)
    return fail_at(s, s->p, "operands nested too deeply");
  int lv = ++s->level;
  if (parse_list(s, lv, 0, NULL))
    goto out;
  if (s->p >= s->end || *s->p != ';') {
    fail_at(s, s->p, "expected ';' after instruction '%s'", st->opcode);
    goto out;
  }
  s->p++;
  take_list(s, lv, &st->ops, &st->nops);
out:
  s->level--;
  return s->err;
}

static int is_space_dir(const char *p, size_t n) {
  static const char *const sp[] = {".reg", ".shared", ".global", ".const", ".local",
                                   ".param", ".tex", ".sreg", ".surfref", ".texref",
                                   ".samplerref", NULL};
  for (int i = 0; sp[i]; i++)
    if (span_is(p, n, sp[i]))
      return 1;
  return 0;
}

static int is_linkage(const char *p, size_t n) {
  return span_is(p, n, ".visible") || span_is(p, n, ".extern") || span_is(p, n, ".weak") ||
         span_is(p, n, ".common");
}

/* Directives that end at the end of their line (no ';'). */
static int is_line_dir(const char *p, size_t n) {
  static const char *const d[] = {".version", ".target", ".address_size", ".file", ".loc",
                                  ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm",
                                  ".maxnreg", ".noreturn", ".explicitcluster",
                                  ".reqnctapercluster", ".maxclusterrank", NULL};
  for (int i = 0; d[i]; i++)
    if (span_is(p, n, d[i]))
      return 1;
  return 0;
}

static int known_semi_dir(const char *p, size_t n) {
  static const char *const d[] = {".pragma", ".callprototype", ".branchtargets",
                                  ".calltargets", ".alias", NULL};
  for (int i = 0; d[i]; i++)
    if (span_is(p, n, d[i]))
      return 1;
  return 0;
}

/* Skips a string literal at s->p ('"'); errors on newline/EOF. */
static int skip_string(ps *s) {
  const char *start = s->p++;
  while (s->p < s->end && *s->p != '"' && *s->p != '\n') {
    if (*s->p == '\\' && s->p + 1 < s->end && s->p[1] != '\n')
      s->p++;
    s->p++;
  }
  if (s->p >= s->end || *s->p != '"')
    return fail_at(s, start, "unterminated string literal");
  s->p++;
  return 0;
}

/* Advances to the ';' ending a statement (balanced braces, strings,
 * comments), leaving s->p after it. */
static int skip_to_semi(ps *s, const char *stmt_start, const char *what) {
  int depth = 0;
  const char *open = NULL;
  for (;;) {
    if (skip_ws_c(s))
      return s->err;
    if (s->p >= s->end)
      return fail_at(s, open ? open : stmt_start, "%s", open ? "unclosed '{' in initializer"
                                                            : what);
    char c = *s->p;
    if (c == '"') {
      if (skip_string(s))
        return s->err;
      continue;
    }
    if (c == '{') {
      if (!depth)
        open = s->p;
      depth++;
    } else if (c == '}') {
      if (!depth)
        return fail_at(s, s->p, "unexpected '}' in statement");
      depth--;
    } else if (c == ';' && !depth) {
      s->p++;
      return 0;
    }
    s->p++;
  }
}

/* Line directive arguments: up to the end of the line or a comment. */
static void scan_line_args(ps *s, const char **aend) {
  const char *p = s->p, *last = s->p;
  while (p < s->end && *p != '\n') {
    if (*p == '/' && p + 1 < s->end && (p[1] == '/' || p[1] == '*'))
      break;
    if (*p == '"') {
      p++;
      while (p < s->end && *p != '"' && *p != '\n')
        p++;
      if (p < s->end && *p == '"')
        p++;
      last = p;
      continue;
    }
    if (*p != ' ' && *p != '\t' && *p != '\r')
      last = p + 1;
    p++;
  }
  s->p = last;
  *aend = last;
}

/* Parses the declaration's space, attributes and names (text through ';'). */
static int parse_decl(ps *s, ag_ptx_stmt *st) {
  AG_VEC(ag_ptx_decl_name) names = {0};
  for (;;) {
    if (skip_ws_c(s))
      goto out;
    if (s->p >= s->end) {
      fail_at(s, st->text, "unterminated declaration: expected ';'");
      goto out;
    }
    char c = *s->p;
    if (c == ';') {
      s->p++;
      break;
    }
    if (c == ',') {
      s->p++;
      continue;
    }
    if (c == '=') {
      st->has_init = 1;
      if (skip_to_semi(s, st->text, "unterminated declaration: expected ';'"))
        goto out;
      break;
    }
    size_t n = scan_ident(s->p, s->end);
    if (!n) {
      fail_at(s, s->p, "unexpected '%c' in declaration", c);
      goto out;
    }
    const char *t = s->p;
    s->p += n;
    if (*t == '.') {
      if (is_space_dir(t, n) || is_linkage(t, n)) {
        if (is_space_dir(t, n) && !(st->name = dup(s, t, n)))
          goto out;
      } else if (span_is(t, n, ".align")) {
        skip_ws(s);
        ag_ptx_opnd_kind k;
        int64_t v = 0;
        double fv;
        size_t nn = s->p < s->end && isdigit((unsigned char)*s->p)
                        ? scan_number(s, s->p, &k, &v, &fv)
                        : 0;
        if (!nn) {
          fail_at(s, s->p, "expected a number after .align");
          goto out;
        }
        st->align = (int)v;
        s->p += nn;
      } else if (span_is(t, n, ".v2") || span_is(t, n, ".v4") || span_is(t, n, ".v8")) {
        st->vec = t[2] - '0';
      } else if (span_is(t, n, ".ptr")) {
      } else if (!st->type) {
        if (!(st->type = dup(s, t, n)))
          goto out;
      }
      continue;
    }
    ag_ptx_decl_name dn = {0};
    if (!(dn.name = dup(s, t, n)))
      goto out;
    if (s->p < s->end && *s->p == '<') {
      const char *lt = s->p++;
      long v = 0;
      int nd = 0;
      while (s->p < s->end && isdigit((unsigned char)*s->p) && nd < 10) {
        v = v * 10 + (*s->p++ - '0');
        nd++;
      }
      if (!nd || s->p >= s->end || *s->p != '>') {
        fail_at(s, lt, "malformed register range: expected '<N>'");
        goto out;
      }
      s->p++;
      dn.count = (int)v;
    }
    const char *as = s->p;
    while (s->p < s->end && *s->p == '[') {
      const char *lb = s->p;
      while (s->p < s->end && *s->p != ']' && *s->p != '\n' && *s->p != ';')
        s->p++;
      if (s->p >= s->end || *s->p != ']') {
        fail_at(s, lb, "unclosed '[' in declaration");
        goto out;
      }
      s->p++;
    }
    if (s->p > as && !(dn.array = dup(s, as, (size_t)(s->p - as))))
      goto out;
    if (ag_vec_push(&names, dn)) {
      oom(s);
      goto out;
    }
  }
  if (!names.n) {
    fail_at(s, st->text, "declaration without a name");
    goto out;
  }
  st->nnames = (int)names.n;
  st->names = ag_arena_alloc(&s->m->arena, sizeof *st->names * names.n);
  if (!st->names) {
    oom(s);
    goto out;
  }
  memcpy(st->names, names.v, sizeof *st->names * names.n);
out:
  ag_vec_free(&names);
  return s->err;
}

/* One parameter of a function header, up to ',' or ')'. */
static int parse_param(ps *s, ag_ptx_param *pm) {
  memset(pm, 0, sizeof *pm);
  for (;;) {
    if (skip_ws_c(s))
      return s->err;
    if (s->p >= s->end)
      return fail_at(s, s->p, "unterminated parameter list: expected ')'");
    char c = *s->p;
    if (c == ',' || c == ')')
      break;
    size_t n = scan_ident(s->p, s->end);
    if (!n)
      return fail_at(s, s->p, "unexpected '%c' in parameter list", c);
    const char *t = s->p;
    s->p += n;
    if (*t == '.') {
      if (span_is(t, n, ".param") || span_is(t, n, ".reg")) {
        if (!(pm->space = dup(s, t, n)))
          return s->err;
      } else if (span_is(t, n, ".align")) {
        skip_ws(s);
        long v = 0;
        int nd = 0;
        while (s->p < s->end && isdigit((unsigned char)*s->p) && nd < 10) {
          v = v * 10 + (*s->p++ - '0');
          nd++;
        }
        if (!nd)
          return fail_at(s, s->p, "expected a number after .align");
        pm->align = (int)v;
      } else if (span_is(t, n, ".ptr")) {
        pm->ptr = 1;
      } else if (!pm->type && t[1] && strchr("busfp", t[1]) && n <= 6) {
        if (!(pm->type = dup(s, t, n)))
          return s->err;
      }
      continue;
    }
    if (!(pm->name = dup(s, t, n)))
      return s->err;
    const char *as = s->p;
    while (s->p < s->end && *s->p == '[') {
      const char *lb = s->p;
      while (s->p < s->end && *s->p != ']' && *s->p != '\n')
        s->p++;
      if (s->p >= s->end || *s->p != ']')
        return fail_at(s, lb, "unclosed '[' in parameter");
      s->p++;
    }
    if (s->p > as && !(pm->array = dup(s, as, (size_t)(s->p - as))))
      return s->err;
  }
  if (!pm->name)
    return fail_at(s, s->p, "parameter without a name");
  return 0;
}

static int parse_params(ps *s, ag_ptx_param **out, int *nout) {
  AG_VEC(ag_ptx_param) v = {0};
  const char *open = s->p++;
  if (skip_ws_c(s))
    goto out;
  if (s->p < s->end && *s->p == ')') {
    s->p++;
    goto done;
  }
  for (;;) {
    ag_ptx_param pm;
    if (parse_param(s, &pm))
      goto out;
    if (ag_vec_push(&v, pm)) {
      oom(s);
      goto out;
    }
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      continue;
    }
    if (s->p < s->end && *s->p == ')') {
      s->p++;
      break;
    }
    fail_at(s, open, "unclosed '(' in function header");
    goto out;
  }
done:
  *nout = (int)v.n;
  if (v.n) {
    *out = ag_arena_alloc(&s->m->arena, sizeof **out * v.n);
    if (!*out) {
      oom(s);
      goto out;
    }
    memcpy(*out, v.v, sizeof **out * v.n);
  }
out:
  ag_vec_free(&v);
  return s->err;
}

static int body(ps *s);

/* Function header from `start` (after its linkage words); s->p at .entry or
 * .func. Parses the body too when one follows. */
static int parse_func(ps *s, ag_ptx_stmt *st, const char *linkage, size_t linklen) {
  ag_ptx_func *f = ag_arena_alloc(&s->m->arena, sizeof *f);
  if (!f)
    return oom(s);
  if (linkage && !(f->linkage = dup(s, linkage, linklen)))
    return s->err;
  size_t n = scan_ident(s->p, s->end);
  f->is_entry = span_is(s->p, n, ".entry");
  s->p += n;
  if (skip_ws_c(s))
    return s->err;
  if (!f->is_entry && s->p < s->end && *s->p == '(') {
    if (parse_params(s, &f->rets, &f->nrets))
      return s->err;
    if (skip_ws_c(s))
      return s->err;
  }
  n = scan_ident(s->p, s->end);
  if (!n || *s->p == '.' || *s->p == '%')
    return fail_at(s, s->p, "expected a function name after '%s'",
                   f->is_entry ? ".entry" : ".func");
  if (!(f->name = dup(s, s->p, n)))
    return s->err;
  st->name = f->name;
  s->p += n;
  const char *hend = s->p;
  if (skip_ws_c(s))
    return s->err;
  if (s->p < s->end && *s->p == '(') {
    if (parse_params(s, &f->params, &f->nparams))
      return s->err;
    hend = s->p;
  }
  /* performance directives and attributes up to '{' or ';' */
  for (;;) {
    if (skip_ws_c(s))
      return s->err;
    if (s->p >= s->end)
      return fail_at(s, st->text, "function '%s' has neither a body nor ';'", f->name);
    char c = *s->p;
    if (c == '{' || c == ';')
      break;
    if (c == '"') {
      if (skip_string(s))
        return s->err;
      hend = s->p;
      continue;
    }
    n = scan_ident(s->p, s->end);
    if (n) {
      s->p += n;
      hend = s->p;
      continue;
    }
    if (isdigit((unsigned char)c)) {
      ag_ptx_opnd_kind k;
      int64_t iv;
      double fv;
      size_t nn = scan_number(s, s->p, &k, &iv, &fv);
      if (!nn)
        return s->err;
      s->p += nn;
      hend = s->p;
      continue;
    }
    if (c == ',') {
      s->p++;
      continue;
    }
    return fail_at(s, s->p, "unexpected '%c' in the header of function '%s'", c, f->name);
  }
  f->header = st;
  st->func = f;
  size_t nf = (size_t)s->m->nfuncs;
  if ((nf & (nf - 1)) == 0 || nf == 0) {
    size_t cap = nf ? nf * 2 : 4;
    ag_ptx_func **nv = ag_arena_alloc(&s->m->arena, sizeof *nv * cap);
    if (!nv)
      return oom(s);
    if (nf)
      memcpy(nv, s->m->funcs, sizeof *nv * nf);
    s->m->funcs = nv;
  }
  s->m->funcs[s->m->nfuncs++] = f;
  if (*s->p == ';') {
    s->p++;
    f->is_decl = 1;
    finish(s, st, s->p);
    return 0;
  }
  finish(s, st, hend);
  rewind_to(s, hend); /* whitespace and comments before '{' are statements */
  /* the body */
  s->func = f;
  s->depth = 0;
  int rc = body(s);
  s->func = NULL;
  s->depth = 0;
  return rc;
}

/* A `.section NAME { raw }` block (debug info). */
static int parse_section(ps *s, ag_ptx_stmt *st) {
  skip_blank(s);
  size_t n = scan_ident(s->p, s->end);
  if (!n)
    return fail_at(s, s->p, "expected a section name after .section");
  s->p += n;
  if (skip_ws_c(s))
    return s->err;
  if (s->p >= s->end || *s->p != '{')
    return fail_at(s, s->p, "expected '{' after the section name");
  const char *open = s->p++;
  int depth = 1;
  while (depth) {
    if (skip_ws_c(s))
      return s->err;
    if (s->p >= s->end)
      return fail_at(s, open, "unclosed '{' of .section");
    char c = *s->p;
    if (c == '"') {
      if (skip_string(s))
        return s->err;
      continue;
    }
    if (c == '{')
      depth++;
    else if (c == '}')
      depth--;
    s->p++;
  }
  (void)st;
  return 0;
}

/* A directive statement (name at s->p). */
static int parse_directive(ps *s, ag_ptx_stmt *st, size_t n) {
  const char *t = s->p;
  if (!(st->name = dup(s, t, n)))
    return s->err;
  s->p += n;
  if (span_is(t, n, ".section")) {
    if (parse_section(s, st))
      return s->err;
    finish(s, st, s->p);
    return 0;
  }
  if (is_line_dir(t, n)) {
    skip_blank(s);
    const char *as = s->p, *ae;
    scan_line_args(s, &ae);
    if (!(st->args = dup(s, as, (size_t)(ae - as))))
      return s->err;
    if (span_is(t, n, ".version") && !s->func)
      s->m->version = st->args;
    else if (span_is(t, n, ".target") && !s->func)
      s->m->target = st->args;
    else if (span_is(t, n, ".address_size") && !s->func)
      s->m->address_size = atoi(st->args);
    finish(s, st, ae);
    return 0;
  }
  if (!known_semi_dir(t, n))
    return fail_at(s, t, "unknown directive '%.*s'", (int)n, t);
  skip_blank(s);
  const char *as = s->p;
  if (skip_to_semi(s, t, "unterminated directive: expected ';'"))
    return s->err;
  const char *ae = s->p - 1;
  while (ae > as && (ae[-1] == ' ' || ae[-1] == '\t' || ae[-1] == '\n' || ae[-1] == '\r'))
    ae--;
  if (!(st->args = dup(s, as, (size_t)(ae - as))))
    return s->err;
  finish(s, st, s->p);
  return 0;
}

/* Comment statement at s->p. */
static int parse_comment(ps *s, const char *lead) {
  ag_ptx_stmt *st = new_stmt(s, AG_PTX_COMMENT, lead, s->p);
  if (!st)
    return s->err;
  if (s->p[1] == '/') {
    while (s->p < s->end && *s->p != '\n')
      s->p++;
    const char *e = s->p;
    if (e > st->text && e[-1] == '\r')
      e--;
    s->p = e;
    finish(s, st, e);
    return 0;
  }
  st->block_comment = 1;
  if (skip_block_comment(s))
    return s->err;
  finish(s, st, s->p);
  return 0;
}

/* A label at s->p if "ident :" follows; returns 1 when parsed. */
static int try_label(ps *s, const char *lead, int *rc) {
  size_t n = scan_ident(s->p, s->end);
  if (!n || *s->p == '.')
    return 0;
  const char *q = s->p + n;
  while (q < s->end && (*q == ' ' || *q == '\t'))
    q++;
  if (q >= s->end || *q != ':' || (q + 1 < s->end && q[1] == ':'))
    return 0;
  ag_ptx_stmt *st = new_stmt(s, AG_PTX_LABEL, lead, s->p);
  if (!st || !(st->name = dup(s, s->p, n))) {
    *rc = s->err;
    return 1;
  }
  s->p = q + 1;
  finish(s, st, s->p);
  *rc = 0;
  return 1;
}

/* The innermost '{' of the current function that is still open (the most
 * recent one at the current depth); NULL when none. Error paths only. */
static const ag_ptx_stmt *open_brace(const ps *s) {
  for (const ag_ptx_stmt *st = s->m->last; st && st->func == s->func; st = st->prev)
    if (st->kind == AG_PTX_BLOCK_BEGIN && st->depth == s->depth)
      return st;
  return NULL;
}

/* One body-level statement at s->p (after its leading whitespace `lead`):
 * comment, '{', '}', declaration, directive, label or instruction. '{' and
 * '}' move s->depth; a '}' that would go below `floor` is not consumed and
 * returns 1 (the caller decides what it means). Returns 0, 1 or the error. */
static int body_stmt(ps *s, const char *lead, int floor) {
  char c = *s->p;
  if (c == '/' && s->p + 1 < s->end && (s->p[1] == '/' || s->p[1] == '*'))
    return parse_comment(s, lead);
  if (c == '{' || c == '}') {
    if (c == '}' && s->depth <= floor)
      return 1;
    ag_ptx_stmt *st = new_stmt(s, c == '{' ? AG_PTX_BLOCK_BEGIN : AG_PTX_BLOCK_END, lead, s->p);
    if (!st)
      return s->err;
    if (c == '{') {
      st->depth = ++s->depth;
      if (s->depth > 1000)
        return fail_at(s, s->p, "blocks nested too deeply");
    } else {
      s->depth--;
    }
    s->p++;
    finish(s, st, s->p);
    return 0;
  }
  if (c == '.') {
    size_t n = scan_ident(s->p, s->end);
    const ag_ptx_stmt *ob;
    if (s->func && (is_linkage(s->p, n) || span_is(s->p, n, ".entry") ||
                    span_is(s->p, n, ".func")) && (ob = open_brace(s)))
      return fail_at(s, s->p, "'{' opened at %d:%d in function '%s' is not closed before "
                     "'%.*s' starts another function", ob->line, ob->col, s->func->name,
                     (int)n, s->p);
    int decl = n && is_space_dir(s->p, n);
    ag_ptx_stmt *st = new_stmt(s, decl ? AG_PTX_DECL : AG_PTX_DIRECTIVE, lead, s->p);
    if (!st)
      return s->err;
    if (!decl)
      return parse_directive(s, st, n ? n : 1);
    if (parse_decl(s, st))
      return s->err;
    finish(s, st, s->p);
    return 0;
  }
  int rc;
  if (try_label(s, lead, &rc))
    return rc;
  if (c == '@' || is_id_start(c)) {
    ag_ptx_stmt *st = new_stmt(s, AG_PTX_INSTR, lead, s->p);
    if (!st || parse_instr(s, st))
      return s->err;
    finish(s, st, s->p);
    return 0;
  }
  if (s->func)
    return fail_at(s, s->p, "unexpected '%c' in the body of function '%s'", c, s->func->name);
  return fail_at(s, s->p, "unexpected '%c' in snippet", c);
}

/* Statements of a function body; s->p before its '{'. */
static int body(ps *s) {
  for (;;) {
    const char *lead = s->p;
    skip_ws(s);
    if (s->p >= s->end) {
      const ag_ptx_stmt *ob = open_brace(s);
      if (ob)
        return fail_at(s, s->func->header->text,
                       "function '%s' has no closing '}' for its body: the '{' opened at "
                       "%d:%d is not closed at the end of the text", s->func->name,
                       ob->line, ob->col);
      return fail_at(s, s->func->header->text,
                     "function '%s' has no closing '}' for its body", s->func->name);
    }
    int open = s->depth == 0 && *s->p == '{';
    if (s->depth == 0 && !open && !(*s->p == '/' && s->p + 1 < s->end &&
                                    (s->p[1] == '/' || s->p[1] == '*')))
      return fail_at(s, s->p, "expected '{' to open the body of function '%s'",
                     s->func->name);
    ag_ptx_stmt *before = s->m->last;
    int rc = body_stmt(s, lead, 0);
    if (rc < 0)
      return rc;
    if (open)
      s->func->body_open = s->m->last;
    if (s->depth == 0 && s->m->last != before && s->m->last->kind == AG_PTX_BLOCK_END) {
      s->func->body_close = s->m->last;
      return 0;
    }
  }
}

/* Module level: directives, declarations, functions, comments. */
static int module(ps *s) {
  for (;;) {
    const char *lead = s->p;
    skip_ws(s);
    if (s->p >= s->end) {
      s->m->trail = lead;
      s->m->trail_len = (uint32_t)(s->end - lead);
      return 0;
    }
    char c = *s->p;
    if (c == '/' && s->p + 1 < s->end && (s->p[1] == '/' || s->p[1] == '*')) {
      if (parse_comment(s, lead))
        return s->err;
      continue;
    }
    if (c != '.')
      return fail_at(s, s->p, c == '{' || c == '}' || is_id_start(c) || c == '@'
                                  ? "statement outside a function"
                                  : "unexpected character '%c' at module level",
                     c);
    const char *start = s->p;
    const char *link = NULL;
    size_t linklen = 0;
    size_t n = scan_ident(s->p, s->end);
    /* linkage words */
    const char *save_p = s->p;
    int save_line = s->line;
    const char *save_ls = s->ls;
    while (n && is_linkage(s->p, n)) {
      if (!link)
        link = s->p;
      s->p += n;
      linklen = (size_t)(s->p - link);
      if (skip_ws_c(s))
        return s->err;
      n = scan_ident(s->p, s->end);
    }
    if (n && (span_is(s->p, n, ".entry") || span_is(s->p, n, ".func"))) {
      s->p = save_p; /* statement starts at the first linkage word */
      s->line = save_line;
      s->ls = save_ls;
      ag_ptx_stmt *st = new_stmt(s, AG_PTX_FUNC, lead, start);
      if (!st)
        return s->err;
      /* re-skip the linkage words */
      n = scan_ident(s->p, s->end);
      while (n && is_linkage(s->p, n)) {
        s->p += n;
        skip_ws_c(s);
        n = scan_ident(s->p, s->end);
      }
      if (parse_func(s, st, link, linklen))
        return s->err;
      continue;
    }
    if (n && is_space_dir(s->p, n)) {
      s->p = save_p;
      s->line = save_line;
      s->ls = save_ls;
      ag_ptx_stmt *st = new_stmt(s, AG_PTX_DECL, lead, start);
      if (!st || parse_decl(s, st))
        return s->err;
      finish(s, st, s->p);
      continue;
    }
    if (link)
      return fail_at(s, s->p, "expected .entry, .func or a declaration after '%.*s'",
                     (int)linklen, link);
    ag_ptx_stmt *st = new_stmt(s, AG_PTX_DIRECTIVE, lead, start);
    if (!st || parse_directive(s, st, n ? n : 1))
      return s->err;
  }
}

static void ps_release(ps *s) {
  for (int i = 0; i < 8; i++)
    ag_vec_free(&s->scratch[i]);
}

int ag_ptx_parse(const char *text, size_t len, const char *name, ag_diags *diags,
                 ag_ptx_module **out) {
  *out = NULL;
  ag_ptx_module *m = ag_calloc(1, sizeof *m);
  if (!m)
    return AG_ENOMEM;
  ag_arena_init(&m->arena, 256 * 1024);
  char *src = ag_arena_alloc(&m->arena, len + 1);
  if (!src || (name && !(m->path = ag_arena_strdup(&m->arena, name)))) {
    ag_ptx_module_free(m);
    return AG_ENOMEM;
  }
  memcpy(src, text, len);
  src[len] = 0;
  ps s;
  memset(&s, 0, sizeof s);
  s.m = m;
  s.diags = diags;
  s.src = s.p = s.ls = src;
  s.end = src + len;
  s.line = 1;
  if (memchr(src, 0, len)) {
    const char *z = memchr(src, 0, len);
    int rc = fail_at(&s, z, "NUL byte in PTX text");
    ps_release(&s);
    ag_ptx_module_free(m);
    return rc;
  }
  int rc = module(&s);
  const ag_ptx_stmt *st = m->first;
  while (!rc && st && st->kind == AG_PTX_COMMENT)
    st = st->next;
  if (!rc && !st) {
    s.p = s.ls = src;
    s.line = 1;
    rc = fail_at(&s, src, "no PTX module here: the text has no directive, declaration or "
                 "function (an empty file?)");
  }
  ps_release(&s);
  if (rc) {
    ag_ptx_module_free(m);
    return rc;
  }
  for (int i = 0; i < m->nfuncs; i++)
    ag_ptx_func_renumber(m->funcs[i]);
  *out = m;
  return 0;
}

int ag_ptx_parse_file(const char *path, ag_diags *diags, ag_ptx_module **out) {
  char *data;
  size_t len;
  *out = NULL;
  int rc = ag_file_read(path, &data, &len);
  if (rc) {
    ag_diags_add(diags, AG_SEV_ERROR, path, 0, 0, NULL, 0, "cannot read PTX file: %s",
                 ag_strerror(rc));
    return rc;
  }
  rc = ag_ptx_parse(data, len, path, diags, out);
  ag_free(data);
  return rc;
}

void ag_ptx_module_free(ag_ptx_module *m) {
  if (!m)
    return;
  ag_arena_release(&m->arena);
  ag_free(m);
}

/* Snippets: body-level statements for transforms. Parsed with a private
 * module cursor and spliced into m's arena. */
int ag_ptx_parse_snippet(ag_ptx_module *m, ag_ptx_func *f, const char *text,
                         ag_diags *diags, ag_ptx_stmt **first, ag_ptx_stmt **last) {
  *first = *last = NULL;
  size_t len = strlen(text);
  char *src = ag_arena_strndup(&m->arena, text, len);
  if (!src)
    return AG_ENOMEM;
  /* parse into a temporary list hung off a scratch module view */
  ag_ptx_module tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.arena = m->arena; /* allocate in m's arena (copied back below) */
  tmp.path = "<snippet>";
  ps s;
  memset(&s, 0, sizeof s);
  s.m = &tmp;
  s.diags = diags;
  s.src = s.p = s.ls = src;
  s.end = src + len;
  s.line = 1;
  s.func = f;
  s.depth = 1; /* body level */
  int base_depth = 1;
  int rc = 0;
  for (;;) {
    const char *lead = s.p;
    skip_ws(&s);
    if (s.p >= s.end)
      break;
    rc = body_stmt(&s, lead, base_depth);
    if (rc == 1)
      rc = fail_at(&s, s.p, "unbalanced '}' in snippet");
    if (rc)
      break;
  }
  if (!rc && s.depth != base_depth)
    rc = fail_at(&s, s.end, "unbalanced '{' in snippet");
  m->arena = tmp.arena; /* the arena grew: take its state back */
  ps_release(&s);
  if (rc)
    return rc;
  for (ag_ptx_stmt *st = tmp.first; st; st = st->next) {
    st->line = 0;
    st->col = 0;
  }
  /* the first statement starts on a new line */
  if (tmp.first && (tmp.first->lead_len == 0 ||
                    !memchr(tmp.first->lead, '\n', tmp.first->lead_len))) {
    char *l = ag_arena_alloc(&m->arena, tmp.first->lead_len + 2);
    if (!l)
      return AG_ENOMEM;
    l[0] = '\n';
    memcpy(l + 1, tmp.first->lead, tmp.first->lead_len);
    tmp.first->lead = l;
    tmp.first->lead_len++;
  }
  *first = tmp.first;
  *last = tmp.last;
  if (*first)
    (*first)->prev = NULL;
  return 0;
}
