/*
 * bind.c — the host half of `argus run` (docs/run.md): `--size` values
 * split into const parameters and problem sizes, the lowering's C
 * expressions (launch preconditions, grid, tensor dims) evaluated over
 * them, and a launch refused, naming the `assume` and its line, before
 * anything reaches the GPU.
 *
 * The evaluator reads exactly the C the lowering writes for host-side
 * expressions (ctext/xtext in lower.c) with C's unsigned 32-bit semantics,
 * so `argus run` decides a precondition the way <kernel>_preconditions()
 * in the CUDA C would. Called a few times per run; no performance concern.
 */
#include "argus/tile_run.h"
#include "run_int.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ evaluator */
typedef struct cx {
  const char *s, *p;
  const char *const *names;
  const uint64_t *vals;
  int n, bits, rc;
  char *err;
  size_t errlen;
} cx;

static void cx_fail(cx *c, int rc, const char *fmt, ...) AG_PRINTF(3, 4);
static void cx_fail(cx *c, int rc, const char *fmt, ...) {
  if (c->rc)
    return;
  c->rc = rc;
  if (c->err && c->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
  }
}
static uint64_t cx_wrap(const cx *c, uint64_t v) { return c->bits == 32 ? (uint32_t)v : v; }
static void cx_ws(cx *c) {
  while (isspace((unsigned char)*c->p))
    c->p++;
}
static int cx_eat(cx *c, const char *tok) {
  cx_ws(c);
  size_t n = strlen(tok);
  if (strncmp(c->p, tok, n))
    return 0;
  /* "&" must not take the first half of "&&", nor "|" of "||" (the bitwise
   * levels are parsed below the logical ones; "<" never meets "<<", which
   * the shift level below it has taken) */
  if (n == 1 && (tok[0] == '&' || tok[0] == '|') && c->p[1] == tok[0])
    return 0;
  c->p += n;
  return 1;
}

static uint64_t cx_expr(cx *c, int depth);

static uint64_t cx_primary(cx *c, int depth) {
  cx_ws(c);
  if (depth > 200) {
    cx_fail(c, AG_EPARSE, "expression nested too deeply");
    return 0;
  }
  if (cx_eat(c, "(")) {
    uint64_t v = cx_expr(c, depth + 1);
    if (!cx_eat(c, ")"))
      cx_fail(c, AG_EPARSE, "expected ')' at '%s' in '%s'", c->p, c->s);
    return v;
  }
  if (cx_eat(c, "-"))
    return cx_wrap(c, (uint64_t)0 - cx_primary(c, depth + 1));
  if (cx_eat(c, "~"))
    return cx_wrap(c, ~cx_primary(c, depth + 1));
  if (cx_eat(c, "!"))
    return !cx_primary(c, depth + 1);
  if (cx_eat(c, "+"))
    return cx_primary(c, depth + 1);
  if (isdigit((unsigned char)*c->p)) {
    char *end;
    uint64_t v = strtoull(c->p, &end, 0);
    c->p = end;
    while (*c->p == 'u' || *c->p == 'U' || *c->p == 'l' || *c->p == 'L')
      c->p++;
    return cx_wrap(c, v);
  }
  if (isalpha((unsigned char)*c->p) || *c->p == '_') {
    const char *b = c->p;
    while (isalnum((unsigned char)*c->p) || *c->p == '_')
      c->p++;
    size_t len = (size_t)(c->p - b);
    if (len == 4 && !strncmp(b, "true", 4))
      return 1;
    if (len == 5 && !strncmp(b, "false", 5))
      return 0;
    for (int i = 0; i < c->n; i++)
      if (strlen(c->names[i]) == len && !strncmp(c->names[i], b, len))
        return cx_wrap(c, c->vals[i]);
    cx_fail(c, AG_EPARSE, "unknown name '%.*s' in '%s'", (int)len, b, c->s);
    return 0;
  }
  cx_fail(c, AG_EPARSE, "unexpected '%s' in '%s'", *c->p ? c->p : "end", c->s);
  return 0;
}

/* Binary operators by C precedence, lowest first. */
static const char *const levels[][6] = {
    {"||"}, {"&&"}, {"|"}, {"^"}, {"&"}, {"==", "!="}, {"<=", ">=", "<", ">"},
    {"<<", ">>"}, {"+", "-"}, {"*", "/", "%"},
};
#define NLEVELS (int)(sizeof levels / sizeof levels[0])

static uint64_t cx_apply(cx *c, const char *op, uint64_t a, uint64_t b) {
  unsigned w = (unsigned)c->bits;
  switch (op[0]) {
  case '|': return op[1] ? (a || b) : (a | b);
  case '&': return op[1] ? (a && b) : (a & b);
  case '^': return a ^ b;
  case '=': return a == b;
  case '!': return a != b;
  case '<': return op[1] == '<' ? (b < w ? cx_wrap(c, a << b) : 0) : op[1] ? a <= b : a < b;
  case '>': return op[1] == '>' ? (b < w ? a >> b : 0) : op[1] ? a >= b : a > b;
  case '+': return cx_wrap(c, a + b);
  case '-': return cx_wrap(c, a - b);
  case '*': return cx_wrap(c, a * b);
  default:
    if (b == 0) {
      cx_fail(c, AG_ERANGE, "division by zero in '%s'", c->s);
      return 0;
    }
    return op[0] == '/' ? a / b : a % b;
  }
}

static uint64_t cx_binary(cx *c, int level, int depth) {
  if (level == NLEVELS)
    return cx_primary(c, depth);
  uint64_t v = cx_binary(c, level + 1, depth);
  for (;;) {
    const char *op = NULL;
    for (int i = 0; i < 6 && levels[level][i]; i++)
      if (cx_eat(c, levels[level][i])) {
        op = levels[level][i];
        break;
      }
    if (!op || c->rc)
      return v;
    uint64_t r = cx_binary(c, level + 1, depth);
    v = cx_apply(c, op, v, r);
  }
}

static uint64_t cx_expr(cx *c, int depth) {
  uint64_t v = cx_binary(c, 0, depth);
  if (cx_eat(c, "?")) {
    uint64_t a = cx_expr(c, depth + 1);
    if (!cx_eat(c, ":"))
      cx_fail(c, AG_EPARSE, "expected ':' in '%s'", c->s);
    uint64_t b = cx_expr(c, depth + 1);
    return v ? a : b;
  }
  return v;
}

int ag_tile_cexpr_eval(const char *expr, const char *const *names, const uint64_t *vals, int n,
                       int bits, uint64_t *out, char *err, size_t errlen) {
  cx c = {expr, expr, names, vals, n, bits == 64 ? 64 : 32, 0, err, errlen};
  *out = 0;
  if (err && errlen)
    err[0] = 0;
  uint64_t v = cx_expr(&c, 0);
  cx_ws(&c);
  if (!c.rc && *c.p)
    cx_fail(&c, AG_EPARSE, "unexpected '%s' in '%s'", c.p, expr);
  if (!c.rc)
    *out = v;
  return c.rc;
}

/* ---------------------------------------------------------------- values */
static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
void ag_tile_run_fill(const char *dt, void *buf, uint64_t bytes, uint64_t *seed, double amp) {
  unsigned char *b = buf;
  int is_half = !strcmp(dt, "bf16") || !strcmp(dt, "f16");
  if (is_half || !strcmp(dt, "f32") || !strcmp(dt, "f64")) {
    int w = is_half ? 2 : dt[1] == '3' ? 4 : 8;
    for (uint64_t i = 0; i + (uint64_t)w <= bytes; i += (uint64_t)w) {
      float f = (float)(((double)(rng_next(seed) >> 40) / 16777216.0 - 0.5) * 2 * amp);
      if (is_half) {
        uint16_t h = dt[0] == 'b' ? ag__f2bf(f) : ag__f2h(f);
        memcpy(b + i, &h, 2);
      } else if (w == 4) {
        memcpy(b + i, &f, 4);
      } else {
        double d = f;
        memcpy(b + i, &d, 8);
      }
    }
    return;
  }
  for (uint64_t i = 0; i < bytes; i++) /* integers: each byte 0..15, small values */
    b[i] = (unsigned char)(rng_next(seed) & 15u);
}

/* ------------------------------------------------------------------ sizes */
static const ag_tile_node *find_kernel(const ag_tile_program *p, const char *name) {
  for (int i = 0; i < p->top.n; i++) {
    const ag_tile_node *k = p->top.v[i];
    if (k->kind == AG_TN_KERNEL && (!name || !strcmp(k->name, name)))
      return k;
  }
  return NULL;
}
static int is_const_param(const ag_tile_node *k, const char *name) {
  for (int i = 0; i < k->list.n; i++) {
    const ag_tile_node *prm = k->list.v[i];
    if (!strcmp(prm->name, name) && prm->a && prm->a->kind == AG_TN_NAME &&
        !strcmp(prm->a->name, "const"))
      return 1;
  }
  return 0;
}

static int diag(const ag_tile_program *p, ag_diags *d, const ag_tile_node *at, const char *fmt,
                ...) AG_PRINTF(4, 5);
static int diag(const ag_tile_program *p, ag_diags *d, const ag_tile_node *at, const char *fmt,
                ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (at)
    return ag_tile_diag(p, d, AG_SEV_ERROR, at, "%s", msg) ? AG_ENOMEM : AG_EPARSE;
  return ag_diags_add(d, AG_SEV_ERROR, p->file, 0, 0, NULL, 0, "%s", msg) ? AG_ENOMEM
                                                                         : AG_EPARSE;
}

void ag_tile_run_sizes_release(ag_tile_run_sizes *s) {
  for (int i = 0; i < s->ndefines; i++)
    ag_free(s->defines[i]);
  for (int i = 0; i < s->n; i++)
    ag_free(s->names[i]);
  ag_free(s->defines);
  ag_free(s->names);
  ag_free(s->vals);
  memset(s, 0, sizeof *s);
}

int ag_tile_run_sizes_parse(const ag_tile_program *p, const char *kernel, const char *spec,
                            ag_diags *d, ag_tile_run_sizes *out) {
  memset(out, 0, sizeof *out);
  const ag_tile_node *k = find_kernel(p, kernel);
  if (!k)
    return diag(p, d, NULL, kernel ? "no kernel '%s' in the file" : "no kernel in the file%s",
                kernel ? kernel : "");
  int rc = 0, cap = 1;
  for (const char *q = spec ? spec : ""; *q; q++)
    cap += *q == ',';
  char *copy = ag_strdup(spec ? spec : "");
  out->defines = ag_calloc((size_t)cap, sizeof *out->defines);
  out->names = ag_calloc((size_t)cap, sizeof *out->names);
  out->vals = ag_calloc((size_t)cap, sizeof *out->vals);
  if (!copy || !out->defines || !out->names || !out->vals) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    while (*tok == ' ')
      tok++;
    char *eq = strchr(tok, '='), *end = NULL;
    if (!eq || eq == tok) {
      rc = diag(p, d, NULL, "--size takes NAME=VALUE items, not '%s'", tok);
      goto out;
    }
    *eq = 0;
    unsigned long long v = strtoull(eq + 1, &end, 0);
    /* a const may be 0 (a flag such as attention_hopper's causal); a size not */
    int isconst = is_const_param(k, tok);
    if (!eq[1] || *end || eq[1] == '-' || (v == 0 && !isconst) || v > 0xffffffffull) {
      rc = diag(p, d, NULL,
                isconst ? "const '%s' must be an integer in 0 .. 2^32 - 1, not '%s'"
                        : "size '%s' must be a positive integer below 2^32, not '%s'",
                tok, eq + 1);
      goto out;
    }
    for (int i = 0; i < out->n; i++)
      if (!strcmp(out->names[i], tok)) {
        rc = diag(p, d, NULL, "size '%s' is given twice", tok);
        goto out;
      }
    for (int i = 0; i < out->ndefines; i++)
      if (!strncmp(out->defines[i], tok, strlen(tok)) && out->defines[i][strlen(tok)] == '=') {
        rc = diag(p, d, NULL, "size '%s' is given twice", tok);
        goto out;
      }
    if (isconst) {
      ag_str s = AG_STR_INIT;
      if (ag_str_printf(&s, "%s=%llu", tok, v)) {
        ag_str_release(&s);
        rc = AG_ENOMEM;
        goto out;
      }
      out->defines[out->ndefines++] = ag_str_detach(&s);
    } else {
      if (!(out->names[out->n] = ag_strdup(tok))) {
        rc = AG_ENOMEM;
        goto out;
      }
      out->vals[out->n++] = v;
    }
  }
out:
  ag_free(copy);
  if (rc)
    ag_tile_run_sizes_release(out);
  return rc;
}

/* ------------------------------------------------------------------- bind */
void ag_tile_bound_release(ag_tile_bound *b) {
  ag_free(b->size_vals);
  ag_free(b->dims);
  ag_free(b->bytes);
  memset(b, 0, sizeof *b);
}

static const ag_tile_node *assume_at(const ag_tile_node *k, int line) {
  for (int i = 0; i < k->list2.n; i++)
    if (k->list2.v[i]->kind == AG_TN_ASSUME && k->list2.v[i]->line == line)
      return k->list2.v[i];
  return NULL;
}

/* "M, N" (sep ", ", suffix "") or "M=…,N=…" (sep ",", suffix "=…"). */
static void size_list(const ag_tile_lkernel *k, ag_str *s, const char *sep, const char *suffix) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == AG_TILE_PARAM_SIZE)
      ag_str_printf(s, "%s%s%s", s->len ? sep : "", k->params[i].name, suffix);
}
static void const_list(const ag_tile_node *kn, ag_str *s) {
  for (int i = 0; kn && i < kn->list.n; i++)
    if (is_const_param(kn, kn->list.v[i]->name))
      ag_str_printf(s, "%s%s", s->len ? ", " : "", kn->list.v[i]->name);
}

int ag_tile_run_bind(const ag_tile_program *p, const ag_tile_lkernel *k,
                     const ag_tile_run_sizes *s, ag_diags *d, ag_tile_bound *out) {
  memset(out, 0, sizeof *out);
  out->k = k;
  int rc = 0, np = k->nparams;
  const ag_tile_node *kn = find_kernel(p, k->name);
  const char **names = ag_calloc((size_t)np + 1, sizeof *names);
  uint64_t *vals = ag_calloc((size_t)np + 1, sizeof *vals);
  out->size_vals = ag_calloc((size_t)np + 1, sizeof *out->size_vals);
  out->dims = ag_calloc((size_t)np * AG_TILE_RUN_MAXRANK + 1, sizeof *out->dims);
  out->bytes = ag_calloc((size_t)np + 1, sizeof *out->bytes);
  ag_str list = AG_STR_INIT, hint = AG_STR_INIT, consts = AG_STR_INIT;
  char err[256];
  if (!names || !vals || !out->size_vals || !out->dims || !out->bytes) {
    rc = AG_ENOMEM;
    goto out;
  }
  size_list(k, &list, ", ", "");
  size_list(k, &hint, ",", "=...");
  const_list(kn, &consts);
  for (int i = 0; i < s->n; i++) {
    int found = 0;
    for (int j = 0; j < np; j++)
      found |= k->params[j].kind == AG_TILE_PARAM_SIZE && !strcmp(k->params[j].name, s->names[i]);
    if (!found) {
      rc = diag(p, d, kn,
                "'%s' is not a size or const parameter of kernel '%s' (its sizes: %s; its const "
                "parameters: %s)",
                s->names[i], k->name, list.len ? ag_str_cstr(&list) : "none",
                consts.len ? ag_str_cstr(&consts) : "none");
      goto out;
    }
  }
  int nn = 0;
  for (int j = 0; j < np; j++) {
    if (k->params[j].kind != AG_TILE_PARAM_SIZE)
      continue;
    int i = 0;
    while (i < s->n && strcmp(s->names[i], k->params[j].name))
      i++;
    if (i == s->n) {
      rc = diag(p, d, kn, "kernel '%s' needs a value for its size '%s' (--size %s)", k->name,
                k->params[j].name, ag_str_cstr(&hint));
      goto out;
    }
    out->size_vals[j] = (uint32_t)s->vals[i];
    names[nn] = k->params[j].name;
    vals[nn++] = s->vals[i];
  }
  /* the preconditions, in order: the first that fails is named */
  for (int i = 0; i < k->nassumes; i++) {
    uint64_t v;
    rc = ag_tile_cexpr_eval(k->assumes[i], names, vals, nn, 32, &v, err, sizeof err);
    if (rc) {
      rc = diag(p, d, assume_at(kn, k->assume_lines[i]),
                "cannot evaluate the precondition '%s': %s", k->assumes[i], err);
      goto out;
    }
    if (!v) {
      const ag_tile_node *at = assume_at(kn, k->assume_lines[i]);
      size_t len = 0;
      const char *src = ag_tile_srcline(p, k->assume_lines[i], &len);
      while (len && (*src == ' '))
        src++, len--;
      ag_str given = AG_STR_INIT;
      for (int j = 0; j < nn; j++)
        ag_str_printf(&given, "%s%s=%llu", j ? ", " : "", names[j], (unsigned long long)vals[j]);
      rc = diag(p, d, at, "the sizes violate '%.*s' (%s:%d) with %s: not launched", (int)len, src,
                p->file, k->assume_lines[i], ag_str_cstr(&given));
      ag_str_release(&given);
      goto out;
    }
  }
  for (int i = 0; i < 3; i++) {
    uint64_t v;
    rc = ag_tile_cexpr_eval(k->grid[i], names, vals, nn, 32, &v, err, sizeof err);
    if (!rc && (v == 0 || v > (i ? 65535u : 0x7fffffffu)))
      rc = diag(p, d, kn, "grid dimension %d of kernel '%s' is %llu (%s) with these sizes: %s",
                i, k->name, (unsigned long long)v, k->grid[i],
                v ? "above the device's limit" : "nothing to launch");
    else if (rc)
      rc = diag(p, d, kn, "cannot evaluate the grid: %s", err);
    if (rc)
      goto out;
    out->grid[i] = (unsigned)v;
  }
  for (int j = 0; j < np; j++) {
    const ag_tile_lparam *prm = &k->params[j];
    if (prm->kind != AG_TILE_PARAM_TENSOR)
      continue;
    if (prm->rank > AG_TILE_RUN_MAXRANK) {
      rc = diag(p, d, kn, "tensor '%s' has %d dims; argus run takes at most %d", prm->name,
                prm->rank, AG_TILE_RUN_MAXRANK);
      goto out;
    }
    uint64_t bytes = (uint64_t)ag__dt_size(ag__dt_lookup(prm->dtype));
    for (int r = 0; r < prm->rank; r++) {
      uint64_t v;
      rc = ag_tile_cexpr_eval(prm->dims[r], names, vals, nn, 32, &v, err, sizeof err);
      if (rc) {
        rc = diag(p, d, kn, "cannot evaluate dim %d of '%s': %s", r, prm->name, err);
        goto out;
      }
      out->dims[j * AG_TILE_RUN_MAXRANK + r] = v;
      bytes = v && bytes > ((uint64_t)1 << 40) / v ? ((uint64_t)1 << 41) : bytes * v;
    }
    if (bytes > ((uint64_t)1 << 40) || bytes == 0) {
      rc = diag(p, d, kn, "tensor '%s' would be %s with these sizes", prm->name,
                bytes ? "over 1 TiB" : "empty");
      goto out;
    }
    out->bytes[j] = bytes;
  }
out:
  ag_str_release(&list);
  ag_str_release(&hint);
  ag_str_release(&consts);
  ag_free(names);
  ag_free(vals);
  if (rc)
    ag_tile_bound_release(out);
  return rc;
}

int ag_tile_run_gemm_shape(const ag_tile_lkernel *k, int *ia, int *ib, int *ic) {
  int t[3], nt = 0;
  *ia = *ib = *ic = -1;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == AG_TILE_PARAM_TENSOR) {
      if (nt == 3)
        return -1;
      t[nt++] = i;
    }
  if (nt != 3)
    return -1;
  const ag_tile_lparam *a = &k->params[t[0]], *b = &k->params[t[1]], *c = &k->params[t[2]];
  if (a->rank != 2 || b->rank != 2 || c->rank != 2)
    return -1;
  int half = (!strcmp(a->dtype, "bf16") || !strcmp(a->dtype, "f16")) &&
             !strcmp(a->dtype, b->dtype);
  int cout = !strcmp(c->dtype, "f32") || !strcmp(c->dtype, "bf16") || !strcmp(c->dtype, "f16");
  if (!half || !cout || strcmp(a->dims[1], b->dims[1]) || strcmp(c->dims[0], a->dims[0]) ||
      strcmp(c->dims[1], b->dims[0]))
    return -1;
  *ia = t[0];
  *ib = t[1];
  *ic = t[2];
  return 0;
}

void ag_tile_run_tolerance(const char *dtype, double *atol, double *rtol) {
  if (!strcmp(dtype, "f32")) {
    *atol = 1e-3;
    *rtol = 1e-3;
  } else if (!strcmp(dtype, "bf16")) {
    *atol = 2e-2;
    *rtol = 2e-2;
  } else if (!strcmp(dtype, "f16")) {
    *atol = 2e-3;
    *rtol = 2e-3;
  } else if (!strcmp(dtype, "f64")) {
    *atol = 1e-9;
    *rtol = 1e-9;
  } else {
    *atol = 0;
    *rtol = 0;
  }
}

double ag__tile_elem_value(ag__dt dt, const void *buf, uint64_t i) {
  int w = ag__dt_size(dt);
  const unsigned char *p = (const unsigned char *)buf + i * (uint64_t)w;
  if (dt == DT_BF16 || dt == DT_F16) {
    uint16_t h;
    memcpy(&h, p, 2);
    return dt == DT_BF16 ? ag__bf2f(h) : ag__h2f(h);
  }
  if (dt == DT_F32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  if (dt == DT_F64) {
    double f;
    memcpy(&f, p, 8);
    return f;
  }
  uint64_t u = 0; /* integers and wider types: compared as bytes, 8 at a time */
  memcpy(&u, p, (size_t)(w < 8 ? w : 8));
  return (double)u;
}

void ag_tile_run_compare(const ag_tile_bound *b, void *const *got, void *const *want,
                         ag_tile_exec_result *r) {
  const ag_tile_lkernel *k = b->k;
  r->nelems = r->nbad = 0;
  r->max_err = 0;
  r->compared_param = -1;
  for (int i = 0; i < k->nparams; i++) {
    const ag_tile_lparam *prm = &k->params[i];
    if (prm->kind != AG_TILE_PARAM_TENSOR || !got[i] || !want[i])
      continue;
    ag__dt dt = ag__dt_lookup(prm->dtype); /* once per tensor, not per element */
    int w = ag__dt_size(dt), wide = w > 8;
    if (wide)
      dt = DT_U64; /* wider types: compared 8 bytes at a time */
    uint64_t n = b->bytes[i] / (uint64_t)(wide ? 8 : w);
    double atol, rtol;
    ag_tile_run_tolerance(prm->dtype, &atol, &rtol);
    if (r->tol_atol > 0 && r->tol_rtol > 0) { /* the caller's (argus optimize's task) */
      atol = r->tol_atol;
      rtol = r->tol_rtol;
    }
    for (uint64_t e = 0; e < n; e++) {
      double g = ag__tile_elem_value(dt, got[i], e), v = ag__tile_elem_value(dt, want[i], e);
      double err = fabs(g - v);
      int same = g == v || (g != g && v != v); /* equal infinities, or both NaN */
      if (!same && !(err <= atol + rtol * fabs(v))) {
        if (!r->nbad++) {
          r->compared_param = i;
          r->bad_rank = prm->rank;
          uint64_t rest = wide ? e * 8 / (uint64_t)w : e;
          for (int d = prm->rank - 1; d >= 0; d--) {
            uint64_t ext = b->dims[i * AG_TILE_RUN_MAXRANK + d];
            r->first_bad[d] = ext ? rest % ext : 0;
            rest = ext ? rest / ext : 0;
          }
          r->got = g;
          r->want = v;
          r->atol = atol;
          r->rtol = rtol;
        }
      }
      if (!same && (err > r->max_err || err != err))
        r->max_err = err;
    }
    r->nelems += n;
  }
}
