/*
 * parse.c — reads CuTe's notation: tuples "((2,4),3)", layouts
 * "((2,4),3):((1,8),2)" (a shape alone means the compact column-major
 * layout of that shape), and tilers "<3:4,(2,4):(1,8)>" (or one layout).
 *
 * Every malformed input gets exactly one diagnostic with its column and the
 * source line (for the caret) and AG_EPARSE; the same text goes to c->err.
 * The stride is parsed guided by the shape, so a structural mismatch is
 * reported where it occurs. Nesting is limited to 64 levels and integers to
 * 64 bits, so any byte string is handled in time linear in its length.
 * The diagnostics pointer may be NULL (c->err still carries the message).
 */
#include "layout_int.h"

#include <stdarg.h>

enum { MAX_DEPTH = 64 };
enum { K_SHAPE, K_ANY };

typedef struct P {
  ag_layout_ctx *c;
  const char *s;
  size_t len, pos;
  ag_diags *d;
  int depth;
} P;

static void skip_ws(P *p) {
  while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
    p->pos++;
}

static int peek(P *p) {
  skip_ws(p);
  return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static const char *describe(P *p, size_t at, char buf[32]) {
  if (at >= p->len)
    return "the end of the input";
  unsigned char ch = (unsigned char)p->s[at];
  if (ch > 32 && ch < 127)
    snprintf(buf, 32, "'%c'", ch);
  else
    snprintf(buf, 32, "byte 0x%02x", ch);
  return buf;
}

static int perr(P *p, size_t at, const char *fmt, ...) AG_PRINTF(3, 4);
static int perr(P *p, size_t at, const char *fmt, ...) {
  ag_str m = AG_STR_INIT;
  va_list ap;
  va_start(ap, fmt);
  ag_str_vprintf(&m, fmt, ap);
  va_end(ap);
  int rc = AG_EPARSE;
  if (m.oom) {
    rc = ag__loom(p->c);
  } else {
    ag__lfail(p->c, AG_EPARSE, "column %zu: %s", at + 1, ag_str_cstr(&m));
    if (p->d && ag_diags_add(p->d, AG_SEV_ERROR, p->c->src_name, 1, (int)at + 1, p->s,
                             p->len, "%s", ag_str_cstr(&m)))
      rc = ag__loom(p->c);
  }
  ag_str_release(&m);
  return rc;
}

static int is_digit(int ch) { return ch >= '0' && ch <= '9'; }

static int parse_int(P *p, int64_t *v) {
  skip_ws(p);
  size_t at = p->pos;
  int neg = 0;
  char buf[32];
  if (p->pos < p->len && p->s[p->pos] == '-') {
    neg = 1;
    p->pos++;
  }
  if (p->pos >= p->len || !is_digit((unsigned char)p->s[p->pos]))
    return perr(p, p->pos, "expected an integer, found %s", describe(p, p->pos, buf));
  int64_t x = 0;
  while (p->pos < p->len && is_digit((unsigned char)p->s[p->pos])) {
    int dgt = p->s[p->pos] - '0';
    if (x > (INT64_MAX - dgt) / 10) {
      while (p->pos < p->len && is_digit((unsigned char)p->s[p->pos]))
        p->pos++;
      return perr(p, at, "integer '%.*s' does not fit in 64 bits", (int)(p->pos - at),
                  p->s + at);
    }
    x = x * 10 + dgt;
    p->pos++;
  }
  *v = neg ? -x : x;
  return 0;
}

static int enter(P *p) {
  if (++p->depth > MAX_DEPTH)
    return perr(p, p->pos, "tuples nested deeper than %d levels", MAX_DEPTH);
  return 0;
}

static int make_node(P *p, ag_tuple **ch, int n, ag_tuple **out) {
  *out = ag_tuple_make(p->c, n, ch);
  return *out ? 0 : ag__loom(p->c);
}

typedef AG_VEC(ag_tuple *) tvec;

static int parse_tuple(P *p, int kind, ag_tuple **out) {
  char buf[32];
  int ch = peek(p);
  size_t at = p->pos;
  if (ch == '(') {
    int rc = enter(p);
    if (rc)
      return rc;
    p->pos++;
    if (peek(p) == ')')
      return perr(p, p->pos, "empty tuple: expected an integer or '('");
    tvec v = {0};
    for (;;) {
      ag_tuple *child = NULL;
      if ((rc = parse_tuple(p, kind, &child)))
        break;
      if (ag_vec_push(&v, child)) {
        rc = ag__loom(p->c);
        break;
      }
      int sep = peek(p);
      if (sep == ',') {
        p->pos++;
        continue;
      }
      if (sep == ')') {
        p->pos++;
        rc = make_node(p, v.v, (int)v.n, out);
        break;
      }
      if (sep == -1)
        rc = perr(p, at, "unbalanced '(': no ')' closes it before the end of the input");
      else
        rc = perr(p, p->pos, "expected ',' or ')', found %s", describe(p, p->pos, buf));
      break;
    }
    ag_vec_free(&v);
    p->depth--;
    return rc;
  }
  if (ch == '-' || is_digit(ch)) {
    int64_t x;
    int rc = parse_int(p, &x);
    if (rc)
      return rc;
    if (kind == K_SHAPE && x < 1)
      return perr(p, at, "extent %lld in a shape must be positive", (long long)x);
    *out = ag_tuple_leaf(p->c, x);
    return *out ? 0 : ag__loom(p->c);
  }
  if (ch == ')')
    return perr(p, at, "unbalanced ')': no '(' opens it");
  return perr(p, at, "expected an integer or '(', found %s", describe(p, at, buf));
}

/* Parses a stride congruent with the shape g, reporting mismatches where
 * they occur. */
static int parse_guided(P *p, const ag_tuple *g, ag_tuple **out) {
  char buf[32];
  int ch = peek(p);
  size_t at = p->pos;
  if (g->is_leaf) {
    if (ch == '(')
      return perr(p, at, "the stride has a tuple where the shape has the integer %lld",
                  (long long)g->value);
    if (ch != '-' && !is_digit(ch)) {
      if (ch == -1)
        return perr(p, at, "the stride ends where the shape has the integer %lld",
                    (long long)g->value);
      return perr(p, at, "expected an integer, found %s", describe(p, at, buf));
    }
    int64_t x;
    int rc = parse_int(p, &x);
    if (rc)
      return rc;
    *out = ag_tuple_leaf(p->c, x);
    return *out ? 0 : ag__loom(p->c);
  }
  if (ch != '(') {
    ag_str gs = AG_STR_INIT;
    ag_tuple_print(g, &gs);
    int rc;
    if (ch == '-' || is_digit(ch))
      rc = perr(p, at, "the stride has an integer where the shape has the tuple %s",
                ag_str_cstr(&gs));
    else
      rc = perr(p, at, "expected '(' to match the shape's %s, found %s", ag_str_cstr(&gs),
                describe(p, at, buf));
    ag_str_release(&gs);
    return rc;
  }
  int rc = enter(p);
  if (rc)
    return rc;
  p->pos++;
  ag_tuple **ch_ = ag_arena_alloc(p->c->arena, (size_t)g->n * sizeof *ch_);
  if (!ch_)
    return ag__loom(p->c);
  for (int i = 0; i < g->n; i++) {
    if ((rc = parse_guided(p, g->child[i], &ch_[i])))
      return rc;
    int sep = peek(p);
    int want = i + 1 < g->n ? ',' : ')';
    if (sep == want) {
      p->pos++;
      continue;
    }
    if (sep == ')' && want == ',')
      return perr(p, p->pos, "the stride has %d modes here but the shape has %d", i + 1, g->n);
    if (sep == ',' && want == ')')
      return perr(p, p->pos, "the stride has more modes here than the shape's %d", g->n);
    if (sep == -1)
      return perr(p, at, "unbalanced '(': no ')' closes it before the end of the input");
    return perr(p, p->pos, "expected '%c', found %s", want, describe(p, p->pos, buf));
  }
  p->depth--;
  return make_node(p, ch_, g->n, out);
}

static int parse_layout_at(P *p, ag_layout *out) {
  size_t start = (skip_ws(p), p->pos);
  ag_tuple *shape = NULL, *stride = NULL;
  int rc = parse_tuple(p, K_SHAPE, &shape);
  if (rc)
    return rc;
  if (peek(p) == ':') {
    p->pos++;
    if ((rc = parse_guided(p, shape, &stride)))
      return rc;
    ag_layout l = {shape, stride};
    if ((rc = ag__range_check(p->c, &l))) {
      ag_str m = AG_STR_INIT;
      ag_str_puts(&m, ag_str_cstr(&p->c->err));
      rc = perr(p, start, "%s", ag_str_cstr(&m));
      ag_str_release(&m);
      return rc;
    }
    *out = l;
    return 0;
  }
  rc = ag_layout_compact(p->c, shape, out);
  if (rc == AG_ERANGE) {
    ag_str m = AG_STR_INIT;
    ag_str_puts(&m, ag_str_cstr(&p->c->err));
    rc = perr(p, start, "%s", ag_str_cstr(&m));
    ag_str_release(&m);
  }
  return rc;
}

static int at_end(P *p, const char *what) {
  char buf[32];
  if (peek(p) != -1)
    return perr(p, p->pos, "unexpected %s after the %s", describe(p, p->pos, buf), what);
  return 0;
}

static void pinit(P *p, ag_layout_ctx *c, const char *text, ag_diags *d) {
  memset(p, 0, sizeof *p);
  p->c = c;
  p->s = text ? text : "";
  p->len = strlen(p->s);
  p->d = d;
}

int ag_layout_parse(ag_layout_ctx *c, const char *text, ag_diags *d, ag_layout *out) {
  P p;
  pinit(&p, c, text, d);
  out->shape = out->stride = NULL;
  ag_layout l;
  int rc = parse_layout_at(&p, &l);
  if (!rc)
    rc = at_end(&p, "layout");
  if (!rc)
    *out = l;
  return rc;
}

int ag_tuple_parse(ag_layout_ctx *c, const char *text, ag_diags *d, ag_tuple **out) {
  P p;
  pinit(&p, c, text, d);
  *out = NULL;
  ag_tuple *t = NULL;
  int rc = parse_tuple(&p, K_ANY, &t);
  if (!rc)
    rc = at_end(&p, "tuple");
  if (!rc)
    *out = t;
  return rc;
}

int ag_tiler_parse(ag_layout_ctx *c, const char *text, ag_diags *d, ag_tiler *out) {
  P p;
  pinit(&p, c, text, d);
  memset(out, 0, sizeof *out);
  char buf[32];
  if (peek(&p) != '<') {
    ag_layout l;
    int rc = parse_layout_at(&p, &l);
    if (!rc)
      rc = at_end(&p, "layout");
    if (!rc) {
      out->is_layout = 1;
      out->layout = l;
    }
    return rc;
  }
  size_t open = p.pos++;
  if (peek(&p) == '>')
    return perr(&p, p.pos, "empty tiler: expected a layout");
  AG_VEC(ag_layout) v = {0};
  int rc = 0;
  for (;;) {
    ag_layout l;
    if ((rc = parse_layout_at(&p, &l)))
      break;
    if (ag_vec_push(&v, l)) {
      rc = ag__loom(c);
      break;
    }
    int sep = peek(&p);
    if (sep == ',') {
      p.pos++;
      continue;
    }
    if (sep == '>') {
      p.pos++;
      break;
    }
    if (sep == -1)
      rc = perr(&p, open, "unbalanced '<': no '>' closes it before the end of the input");
    else
      rc = perr(&p, p.pos, "expected ',' or '>', found %s", describe(&p, p.pos, buf));
    break;
  }
  if (!rc)
    rc = at_end(&p, "tiler");
  if (!rc) {
    out->modes = ag_arena_alloc(c->arena, v.n * sizeof *out->modes);
    if (!out->modes) {
      rc = ag__loom(c);
    } else {
      memcpy(out->modes, v.v, v.n * sizeof *out->modes);
      out->n = (int)v.n;
    }
  }
  ag_vec_free(&v);
  if (rc)
    memset(out, 0, sizeof *out);
  return rc;
}
