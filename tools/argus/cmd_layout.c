/*
 * cmd_layout.c — `argus layout`: a calculator for CuTe's layout algebra.
 * One subcommand per operation; each prints one result on one line in CuTe
 * notation (or, with --json, the structure), except `print`, which draws a
 * 2-D layout as a table of offsets, or with --tv a thread-value layout as
 * the tile with the thread and value that hold each element.
 *
 * Exit codes: 0 ok; 2 malformed input (a diagnostic with column and caret)
 * or a usage error; 1 an operation that is undefined for its operands (the
 * message names the modes) or a result that cannot be drawn.
 * A layout argument "@NAME" names an instruction atom (layout_atoms.h).
 */
#include "cli.h"

#include "argus/layout.h"
#include "argus/layout_atoms.h"

#include <stdlib.h>
#include <string.h>

const ag_cli_opt cmd_layout_opts[] = {
    {"tv", 0, NULL, "print: draw a thread-value layout (mode 0 threads, mode 1 values)"},
    {"tile", 0, "M,N", "print --tv: the M x N tile it maps into (default: an @atom's tile)"},
    {"swizzle", 0, "B,M,S", "eval, print: apply Swizzle<B,M,S> to the offsets"},
    {"by-mode", 0, NULL, "coalesce: coalesce each top-level mode, keeping the rank"},
    {0},
};

const char cmd_layout_details[] =
    "subcommands (L, A, B are layouts like ((2,4),3):((1,8),2); a shape alone is\n"
    "column-major; B may be a tiler <3:4,(2,4):(1,8)> where noted; @NAME is an\n"
    "instruction atom, e.g. @mma.m16n8k16.a or @wgmma.m64n64k16.d):\n"
    "  eval L X                 offset of X, a linear index or a coordinate tuple\n"
    "  coalesce L [--by-mode]   simplest layout with the same function\n"
    "  compose A B              A o B (B a layout or a tiler)\n"
    "  complement L [COTARGET]  the layout of what L does not reach\n"
    "  right_inverse L          R with L(R(i)) == i\n"
    "  left_inverse L           R with R(L(i)) == i\n"
    "  logical_divide A B       A o (B, complement(B, size(A))) (B a layout or tiler)\n"
    "  zipped_divide A B        ((tiles), (rests)) (B a layout or tiler)\n"
    "  tiled_divide A B         ((tiles), rest0, rest1, ...) (B a layout or tiler)\n"
    "  logical_product A B      (A, complement(A, size(A)*cosize(B)) o B) (B tiler ok)\n"
    "  blocked_product A B      A repeated over B, blocks kept together\n"
    "  raked_product A B        A repeated over B, interleaved\n"
    "  swizzle B M S X          Swizzle<B,M,S> applied to the offset X\n"
    "  print L [--tv --tile M,N] [--swizzle B,M,S]   draw a rank-2 layout\n"
    "  gmma K|MN none|32|64|128 ROWS COLS  the canonical wgmma layout of a 16-bit\n"
    "                           tile (A: M x K, B: N x K): Swizzle<B,3,3> o L\n"
    "exit 0 ok, 1 undefined operation, 2 malformed input. See docs/layout.md.";

typedef struct S {
  ag_cli *cli;
  ag_arena arena;
  ag_layout_ctx c;
  ag_diags d;
  const char *sub;
} S;

/* ---------------------------------------------------------------- helpers */

static int parse_fail(S *s) {
  if (s->d.items.n)
    ag_cli_print_diags(&s->d);
  else
    ag_cli_error(s->cli, "%s", ag_str_cstr(&s->c.err));
  return AG_EXIT_USAGE;
}

static int op_fail(S *s) {
  ag_cli_error(s->cli, "%s", ag_str_cstr(&s->c.err));
  return AG_EXIT_FAIL;
}

/* Parses a layout argument ("@atom" or CuTe notation) named role. */
static int arg_layout(S *s, const char *role, const char *text, ag_layout *out,
                      ag_atom_info *info) {
  if (text[0] == '@') {
    ag_atom_info tmp;
    int rc = ag_atom_layout(&s->c, text + 1, out, info ? info : &tmp);
    if (rc) {
      ag_cli_error(s->cli, "%s: %s", role, ag_str_cstr(&s->c.err));
      return AG_EXIT_USAGE;
    }
    return 0;
  }
  s->c.src_name = role;
  int rc = ag_layout_parse(&s->c, text, &s->d, out);
  s->c.src_name = NULL;
  return rc ? parse_fail(s) : 0;
}

static int arg_tiler(S *s, const char *role, const char *text, ag_tiler *out) {
  if (text[0] == '@') {
    memset(out, 0, sizeof *out);
    out->is_layout = 1;
    return arg_layout(s, role, text, &out->layout, NULL);
  }
  s->c.src_name = role;
  int rc = ag_tiler_parse(&s->c, text, &s->d, out);
  s->c.src_name = NULL;
  return rc ? parse_fail(s) : 0;
}

/* An integer argument, with a column diagnostic when malformed. */
static int arg_int(S *s, const char *role, const char *text, int64_t lo, int64_t hi,
                   int64_t *out) {
  ag_tuple *t;
  s->c.src_name = role;
  int rc = ag_tuple_parse(&s->c, text, &s->d, &t);
  s->c.src_name = NULL;
  if (rc)
    return parse_fail(s);
  if (!t->is_leaf) {
    ag_diags_add(&s->d, AG_SEV_ERROR, role, 1, 1, text, strlen(text),
                 "expected an integer, not a tuple");
    return parse_fail(s);
  }
  if (t->value < lo || t->value > hi) {
    ag_diags_add(&s->d, AG_SEV_ERROR, role, 1, 1, text, strlen(text),
                 "%lld is out of range: expected %lld..%lld", (long long)t->value,
                 (long long)lo, (long long)hi);
    return parse_fail(s);
  }
  *out = t->value;
  return 0;
}

/* "a,b[,c]" (or "axb") into n positive or any integers. */
static int opt_ints(S *s, const char *opt, const char *text, int n, int positive, int64_t *v) {
  const char *p = text;
  for (int i = 0; i < n; i++) {
    char *end;
    if (!((*p >= '0' && *p <= '9') || (*p == '-' && !positive)))
      goto bad;
    long long x = strtoll(p, &end, 10);
    if (end == p || (positive && x < 1))
      goto bad;
    v[i] = x;
    p = end;
    if (i + 1 < n) {
      if (*p != ',' && *p != 'x')
        goto bad;
      p++;
    }
  }
  if (*p == 0)
    return 0;
bad:
  return ag_cli_usage_error(s->cli, "--%s expects %d %s separated by ',', got '%s'", opt, n,
                            positive ? "positive integers" : "integers", text);
}

static int opt_swizzle(S *s, ag_swizzle *sw, int *have) {
  const char *t = ag_cli_get(s->cli, "swizzle");
  *have = t != NULL;
  if (!t)
    return 0;
  int64_t v[3];
  int rc = opt_ints(s, "swizzle", t, 3, 0, v);
  if (rc)
    return rc;
  *sw = (ag_swizzle){(int)v[0], (int)v[1], (int)v[2]};
  if (v[0] != sw->b || v[1] != sw->m || v[2] != sw->s || ag_swizzle_check(&s->c, *sw))
    return ag_cli_usage_error(s->cli, "--swizzle %s: %s", t, ag_str_cstr(&s->c.err));
  return 0;
}

static int emit_layout(S *s, const ag_layout *r, const char **args, int nargs) {
  if (s->cli->json) {
    json_t *j = json_object(), *a = json_array(), *lj = ag_layout_to_json(r);
    for (int i = 0; i < nargs; i++)
      json_array_append_new(a, json_string(args[i]));
    json_object_set_new(j, "op", json_string(s->sub));
    json_object_set_new(j, "args", a);
    json_object_set_new(j, "result", lj);
    int rc = lj ? ag_cli_print_json(j) : AG_ENOMEM;
    json_decref(j);
    return rc ? AG_EXIT_FAIL : AG_EXIT_OK;
  }
  ag_str out = AG_STR_INIT;
  ag_layout_print(r, &out);
  printf("%s\n", ag_str_cstr(&out));
  ag_str_release(&out);
  return AG_EXIT_OK;
}

/* ------------------------------------------------------------ subcommands */

static int do_eval(S *s, const char **a, int n) {
  ag_layout l;
  ag_tuple *x;
  ag_swizzle sw;
  int have_sw, rc;
  if ((rc = arg_layout(s, "L", a[0], &l, NULL)) || (rc = opt_swizzle(s, &sw, &have_sw)))
    return rc;
  s->c.src_name = "X";
  rc = ag_tuple_parse(&s->c, a[1], &s->d, &x);
  s->c.src_name = NULL;
  if (rc)
    return parse_fail(s);
  int64_t off, size = ag_layout_size(&l);
  ag_tuple *crd = x;
  if (x->is_leaf) {
    if (x->value < 0 || x->value >= size) {
      ag_cli_error(s->cli, "index %lld is outside the domain [0,%lld) of the layout",
                   (long long)x->value, (long long)size);
      return AG_EXIT_FAIL;
    }
    if (ag_idx2crd(&s->c, x->value, l.shape, &crd))
      return op_fail(s);
    rc = ag_layout_eval_index(&l, x->value, &off);
  } else {
    if (ag_layout_coord_check(&s->c, &l, x))
      return op_fail(s);
    rc = ag_layout_eval_coord(&l, x, &off);
  }
  if (rc) {
    ag_cli_error(s->cli, "eval: %s", ag_strerror(rc));
    return AG_EXIT_FAIL;
  }
  int64_t res = have_sw ? ag_swizzle_apply(sw, off) : off;
  if (s->cli->json) {
    ag_str cs = AG_STR_INIT;
    ag_tuple_print(crd, &cs);
    json_t *j = json_pack("{s:s,s:o,s:s,s:s,s:I}", "op", "eval", "layout", ag_layout_to_json(&l),
                          "input", a[1], "coordinate", ag_str_cstr(&cs), "offset",
                          (json_int_t)off);
    if (j && have_sw)
      json_object_set_new(j, "swizzled", json_integer(res));
    ag_str_release(&cs);
    rc = j ? ag_cli_print_json(j) : AG_ENOMEM;
    json_decref(j);
    return rc ? AG_EXIT_FAIL : AG_EXIT_OK;
  }
  printf("%lld\n", (long long)res);
  return AG_EXIT_OK;
}

static int do_coalesce(S *s, const char **a, int n) {
  ag_layout l, r;
  int rc = arg_layout(s, "L", a[0], &l, NULL);
  if (rc)
    return rc;
  rc = ag_cli_flag(s->cli, "by-mode") ? ag_layout_coalesce_by_mode(&s->c, &l, &r)
                                      : ag_layout_coalesce(&s->c, &l, &r);
  return rc ? op_fail(s) : emit_layout(s, &r, a, n);
}

static int do_compose(S *s, const char **a, int n) {
  ag_layout l, r;
  ag_tiler t;
  int rc;
  if ((rc = arg_layout(s, "A", a[0], &l, NULL)) || (rc = arg_tiler(s, "B", a[1], &t)))
    return rc;
  return ag_layout_compose_tiler(&s->c, &l, &t, &r) ? op_fail(s) : emit_layout(s, &r, a, n);
}

static int do_complement(S *s, const char **a, int n) {
  ag_layout l, r;
  int64_t cot = 0;
  int rc = arg_layout(s, "L", a[0], &l, NULL);
  if (rc || (n > 1 && (rc = arg_int(s, "COTARGET", a[1], 1, INT64_MAX, &cot))))
    return rc;
  return ag_layout_complement(&s->c, &l, cot, &r) ? op_fail(s) : emit_layout(s, &r, a, n);
}

static int do_inverse(S *s, const char **a, int n) {
  ag_layout l, r;
  int rc = arg_layout(s, "L", a[0], &l, NULL);
  if (rc)
    return rc;
  rc = !strcmp(s->sub, "right_inverse") ? ag_layout_right_inverse(&s->c, &l, &r)
                                        : ag_layout_left_inverse(&s->c, &l, &r);
  return rc ? op_fail(s) : emit_layout(s, &r, a, n);
}

static int do_divide(S *s, const char **a, int n) {
  ag_layout l, r;
  ag_tiler t;
  int rc;
  if ((rc = arg_layout(s, "A", a[0], &l, NULL)) || (rc = arg_tiler(s, "B", a[1], &t)))
    return rc;
  if (!strcmp(s->sub, "logical_divide"))
    rc = ag_layout_logical_divide(&s->c, &l, &t, &r);
  else if (!strcmp(s->sub, "zipped_divide"))
    rc = ag_layout_zipped_divide(&s->c, &l, &t, &r);
  else if (!strcmp(s->sub, "tiled_divide"))
    rc = ag_layout_tiled_divide(&s->c, &l, &t, &r);
  else
    rc = ag_layout_logical_product(&s->c, &l, &t, &r);
  return rc ? op_fail(s) : emit_layout(s, &r, a, n);
}

static int do_rank_product(S *s, const char **a, int n) {
  ag_layout x, y, r;
  int rc;
  if ((rc = arg_layout(s, "A", a[0], &x, NULL)) || (rc = arg_layout(s, "B", a[1], &y, NULL)))
    return rc;
  rc = !strcmp(s->sub, "blocked_product") ? ag_layout_blocked_product(&s->c, &x, &y, &r)
                                          : ag_layout_raked_product(&s->c, &x, &y, &r);
  return rc ? op_fail(s) : emit_layout(s, &r, a, n);
}

static int do_swizzle(S *s, const char **a, int n) {
  int64_t b, m, sh, x;
  int rc;
  if ((rc = arg_int(s, "B", a[0], 0, 62, &b)) || (rc = arg_int(s, "M", a[1], 0, 62, &m)) ||
      (rc = arg_int(s, "S", a[2], -62, 62, &sh)) ||
      (rc = arg_int(s, "X", a[3], 0, INT64_MAX, &x)))
    return rc;
  ag_swizzle sw = {(int)b, (int)m, (int)sh};
  if (ag_swizzle_check(&s->c, sw)) {
    ag_cli_error(s->cli, "%s", ag_str_cstr(&s->c.err));
    return AG_EXIT_USAGE;
  }
  int64_t r = ag_swizzle_apply(sw, x);
  if (s->cli->json) {
    json_t *j = json_pack("{s:s,s:{s:i,s:i,s:i},s:I,s:I}", "op", "swizzle", "swizzle", "b",
                          sw.b, "m", sw.m, "s", sw.s, "x", (json_int_t)x, "offset",
                          (json_int_t)r);
    rc = j ? ag_cli_print_json(j) : AG_ENOMEM;
    json_decref(j);
    return rc ? AG_EXIT_FAIL : AG_EXIT_OK;
  }
  printf("%lld\n", (long long)r);
  return AG_EXIT_OK;
}

/* The canonical wgmma shared-memory layout of a 16-bit tile (layout_atoms.h). */
static int do_gmma(S *s, const char **a, int n) {
  (void)n;
  ag_gmma_major mj;
  if (!strcmp(a[0], "K"))
    mj = AG_GMMA_K_MAJOR;
  else if (!strcmp(a[0], "MN"))
    mj = AG_GMMA_MN_MAJOR;
  else
    return ag_cli_usage_error(s->cli, "MAJOR is '%s': K or MN", a[0]);
  int64_t sw = 0, rows, cols;
  int rc;
  if (strcmp(a[1], "none") && (rc = arg_int(s, "SWIZZLE", a[1], 0, 1024, &sw)))
    return rc;
  if ((rc = arg_int(s, "ROWS", a[2], 1, INT32_MAX, &rows)) ||
      (rc = arg_int(s, "COLS", a[3], 1, INT32_MAX, &cols)))
    return rc;
  ag_smem_tile t;
  if (ag_gmma_smem_layout(&s->c, mj, (ag_swz_mode)sw, rows, cols, 0, &t))
    return op_fail(s);
  if (s->cli->json) {
    json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:I,s:{s:i,s:i,s:i},s:o}", "op", "gmma", "major",
                          a[0], "swizzle_bytes", (json_int_t)sw, "rows", (json_int_t)rows,
                          "cols", (json_int_t)cols, "swizzle", "b", t.swz.b, "m", t.swz.m, "s",
                          t.swz.s, "layout", ag_layout_to_json(&t.layout));
    rc = j ? ag_cli_print_json(j) : AG_ENOMEM;
    json_decref(j);
    return rc ? AG_EXIT_FAIL : AG_EXIT_OK;
  }
  ag_str out = AG_STR_INIT;
  ag_layout_print(&t.layout, &out);
  printf("Swizzle<%d,%d,%d> o %s\n", t.swz.b, t.swz.m, t.swz.s, ag_str_cstr(&out));
  ag_str_release(&out);
  return AG_EXIT_OK;
}

/* --------------------------------------------------------------- printing */

enum { MAX_CELLS = 1 << 20 };

/* Rows print as " R | c | c |": the first '|' is at column rw+2. */
static void rule(int rw, int cw, int64_t cols) {
  printf("%*s+", rw + 2, "");
  for (int64_t j = 0; j < cols; j++) {
    for (int k = 0; k < cw + 2; k++)
      putchar('-');
    putchar('+');
  }
  putchar('\n');
}

static void header(int rw, int cw, int64_t cols) {
  printf("%*s", rw + 4, "");
  for (int64_t j = 0; j < cols; j++)
    printf("%*lld%s", cw, (long long)j, j + 1 < cols ? "   " : "\n");
}

static int digits(int64_t v) {
  char b[32];
  return snprintf(b, sizeof b, "%lld", (long long)v);
}

/* (thread, value) holding a cell: first holder and how many hold it. */
typedef struct cell {
  int64_t t, v, count;
} cell;

static int print_tv(S *s, const ag_layout *l, const char *text, int64_t rows, int64_t cols,
                    int have_sw, ag_swizzle sw) {
  if (ag_layout_rank(l) != 2) {
    ag_cli_error(s->cli,
                 "print --tv: a thread-value layout has rank 2 (threads, values); "
                 "this one has rank %d",
                 ag_layout_rank(l));
    return AG_EXIT_FAIL;
  }
  if (rows > MAX_CELLS || cols > MAX_CELLS || rows * cols > MAX_CELLS) {
    ag_cli_error(s->cli, "print: a %lldx%lld tile is too large to draw",
                 (long long)rows, (long long)cols);
    return AG_EXIT_FAIL;
  }
  ag_layout tm = {l->shape->child[0], l->stride->child[0]};
  ag_layout vm = {l->shape->child[1], l->stride->child[1]};
  int64_t nt = ag_layout_size(&tm), nv = ag_layout_size(&vm), ncell = rows * cols;
  cell *cells = calloc((size_t)ncell, sizeof *cells);
  if (!cells)
    return ag_cli_fail(s->cli, AG_ENOMEM, "print");
  int rc = AG_EXIT_OK, dup = 0, held = 0;
  for (int64_t t = 0; t < nt && rc == AG_EXIT_OK; t++) {
    for (int64_t v = 0; v < nv; v++) {
      int64_t ot, ov, o;
      if (ag_layout_eval_index(&tm, t, &ot) || ag_layout_eval_index(&vm, v, &ov) ||
          __builtin_add_overflow(ot, ov, &o)) {
        rc = ag_cli_fail(s->cli, AG_ERANGE, "print: offset of thread %lld value %lld",
                         (long long)t, (long long)v);
        break;
      }
      if (have_sw)
        o = ag_swizzle_apply(sw, o);
      if (o < 0 || o >= ncell) {
        ag_cli_error(s->cli,
                     "print --tv: thread %lld value %lld maps to offset %lld, "
                     "outside the %lldx%lld tile",
                     (long long)t, (long long)v, (long long)o, (long long)rows, (long long)cols);
        rc = AG_EXIT_FAIL;
        break;
      }
      cell *c = &cells[o];
      if (c->count++ == 0) {
        c->t = t;
        c->v = v;
        held++;
      } else {
        dup = 1;
      }
    }
  }
  if (rc != AG_EXIT_OK) {
    free(cells);
    return rc;
  }
  if (s->cli->json) {
    json_t *grid = json_array();
    for (int64_t i = 0; i < rows; i++) {
      json_t *row = json_array();
      for (int64_t j = 0; j < cols; j++) {
        cell *c = &cells[i + rows * j];
        json_array_append_new(row, c->count ? json_pack("{s:I,s:I,s:I}", "t", (json_int_t)c->t,
                                                        "v", (json_int_t)c->v, "holders",
                                                        (json_int_t)c->count)
                                            : json_null());
      }
      json_array_append_new(grid, row);
    }
    json_t *j = json_pack("{s:s,s:o,s:[I,I],s:s,s:o}", "op", "print", "layout",
                          ag_layout_to_json(l), "tile", (json_int_t)rows, (json_int_t)cols,
                          "convention", "offset = row + rows*col", "cells", grid);
    int e = j ? ag_cli_print_json(j) : AG_ENOMEM;
    json_decref(j);
    free(cells);
    return e ? AG_EXIT_FAIL : AG_EXIT_OK;
  }
  int cw = 1, rw = digits(rows - 1);
  char buf[64];
  for (int64_t k = 0; k < ncell; k++) {
    int w = cells[k].count ? snprintf(buf, sizeof buf, "T%lldV%lld%s", (long long)cells[k].t,
                                      (long long)cells[k].v, cells[k].count > 1 ? "*" : "")
                           : 1;
    if (w > cw)
      cw = w;
  }
  if (digits(cols - 1) > cw)
    cw = digits(cols - 1);
  printf("%s on a %lldx%lld tile (offset = row + %lld*col): cell = TthreadVvalue\n", text,
         (long long)rows, (long long)cols, (long long)rows);
  header(rw, cw, cols);
  rule(rw, cw, cols);
  for (int64_t i = 0; i < rows; i++) {
    printf(" %*lld |", rw, (long long)i);
    for (int64_t j = 0; j < cols; j++) {
      cell *c = &cells[i + rows * j];
      if (c->count)
        snprintf(buf, sizeof buf, "T%lldV%lld%s", (long long)c->t, (long long)c->v,
                 c->count > 1 ? "*" : "");
      else
        snprintf(buf, sizeof buf, ".");
      printf(" %*s |", cw, buf);
    }
    putchar('\n');
  }
  rule(rw, cw, cols);
  if (dup)
    printf("* held by more than one (thread, value); the lowest thread (then value) is shown\n");
  if (held < ncell)
    printf(". held by no (thread, value): %lld of %lld elements\n", (long long)(ncell - held),
           (long long)ncell);
  free(cells);
  return AG_EXIT_OK;
}

static int print_plain(S *s, const ag_layout *l, const char *text, int have_sw,
                       ag_swizzle sw) {
  int rank = ag_layout_rank(l);
  if (rank > 2) {
    ag_cli_error(s->cli,
                 "print draws layouts of rank 1 or 2; this one has rank %d (group "
                 "modes with parentheses to draw it)",
                 rank);
    return AG_EXIT_FAIL;
  }
  ag_layout rm = *l, cm = {NULL, NULL};
  if (rank == 2) {
    rm = (ag_layout){l->shape->child[0], l->stride->child[0]};
    cm = (ag_layout){l->shape->child[1], l->stride->child[1]};
  }
  int64_t rows = ag_layout_size(&rm), cols = rank == 2 ? ag_layout_size(&cm) : 1;
  if (rows > MAX_CELLS || cols > MAX_CELLS || rows * cols > MAX_CELLS) {
    ag_cli_error(s->cli, "print: a %lldx%lld layout is too large to draw",
                 (long long)rows, (long long)cols);
    return AG_EXIT_FAIL;
  }
  int64_t *v = malloc((size_t)(rows * cols) * sizeof *v);
  if (!v)
    return ag_cli_fail(s->cli, AG_ENOMEM, "print");
  int cw = digits(cols - 1), rw = digits(rows - 1);
  for (int64_t i = 0; i < rows; i++) {
    for (int64_t j = 0; j < cols; j++) {
      int64_t a, b = 0, o;
      if (ag_layout_eval_index(&rm, i, &a) || (rank == 2 && ag_layout_eval_index(&cm, j, &b)) ||
          __builtin_add_overflow(a, b, &o)) {
        free(v);
        return ag_cli_fail(s->cli, AG_ERANGE, "print: offset of (%lld,%lld)", (long long)i,
                           (long long)j);
      }
      v[i + rows * j] = have_sw ? ag_swizzle_apply(sw, o) : o;
      if (digits(v[i + rows * j]) > cw)
        cw = digits(v[i + rows * j]);
    }
  }
  if (s->cli->json) {
    json_t *grid = json_array();
    for (int64_t i = 0; i < rows; i++) {
      json_t *row = json_array();
      for (int64_t j = 0; j < cols; j++)
        json_array_append_new(row, json_integer(v[i + rows * j]));
      json_array_append_new(grid, row);
    }
    json_t *j = json_pack("{s:s,s:o,s:I,s:I,s:o}", "op", "print", "layout", ag_layout_to_json(l),
                          "rows", (json_int_t)rows, "cols", (json_int_t)cols, "cells", grid);
    if (j && have_sw)
      json_object_set_new(j, "swizzle", json_pack("{s:i,s:i,s:i}", "b", sw.b, "m", sw.m, "s", sw.s));
    int e = j ? ag_cli_print_json(j) : AG_ENOMEM;
    json_decref(j);
    free(v);
    return e ? AG_EXIT_FAIL : AG_EXIT_OK;
  }
  if (have_sw)
    printf("Swizzle<%d,%d,%d> o %s\n", sw.b, sw.m, sw.s, text);
  else
    printf("%s\n", text);
  header(rw, cw, cols);
  rule(rw, cw, cols);
  for (int64_t i = 0; i < rows; i++) {
    printf(" %*lld |", rw, (long long)i);
    for (int64_t j = 0; j < cols; j++)
      printf(" %*lld |", cw, (long long)v[i + rows * j]);
    putchar('\n');
  }
  rule(rw, cw, cols);
  free(v);
  return AG_EXIT_OK;
}

static int do_print(S *s, const char **a, int n) {
  ag_layout l;
  ag_atom_info info;
  memset(&info, 0, sizeof info);
  ag_swizzle sw;
  int have_sw, rc;
  if ((rc = arg_layout(s, "L", a[0], &l, &info)) || (rc = opt_swizzle(s, &sw, &have_sw)))
    return rc;
  ag_str text = AG_STR_INIT;
  ag_layout_print(&l, &text);
  if (info.name) {
    ag_str t2 = AG_STR_INIT;
    ag_str_printf(&t2, "%s = %s", info.name, ag_str_cstr(&text));
    ag_str_release(&text);
    text = t2;
  }
  if (ag_cli_flag(s->cli, "tv")) {
    int64_t mn[2] = {info.rows, info.cols};
    const char *tile = ag_cli_get(s->cli, "tile");
    if (tile)
      rc = opt_ints(s, "tile", tile, 2, 1, mn);
    else if (!info.name)
      rc = ag_cli_usage_error(s->cli, "print --tv needs --tile M,N (the tile the layout maps into)");
    if (!rc)
      rc = print_tv(s, &l, ag_str_cstr(&text), mn[0], mn[1], have_sw, sw);
  } else if (ag_cli_get(s->cli, "tile")) {
    rc = ag_cli_usage_error(s->cli, "--tile goes with --tv");
  } else {
    rc = print_plain(s, &l, ag_str_cstr(&text), have_sw, sw);
  }
  ag_str_release(&text);
  return rc;
}

/* ------------------------------------------------------------------ table */

typedef struct sub {
  const char *name;
  int min, max;
  int (*fn)(S *s, const char **args, int n);
  const char *args;
} sub;

static const sub subs[] = {
    {"eval", 2, 2, do_eval, "L X"},
    {"coalesce", 1, 1, do_coalesce, "L [--by-mode]"},
    {"compose", 2, 2, do_compose, "A B"},
    {"complement", 1, 2, do_complement, "L [COTARGET]"},
    {"right_inverse", 1, 1, do_inverse, "L"},
    {"left_inverse", 1, 1, do_inverse, "L"},
    {"logical_divide", 2, 2, do_divide, "A B"},
    {"zipped_divide", 2, 2, do_divide, "A B"},
    {"tiled_divide", 2, 2, do_divide, "A B"},
    {"logical_product", 2, 2, do_divide, "A B"},
    {"blocked_product", 2, 2, do_rank_product, "A B"},
    {"raked_product", 2, 2, do_rank_product, "A B"},
    {"swizzle", 4, 4, do_swizzle, "B M S X"},
    {"print", 1, 1, do_print, "L [--tv --tile M,N] [--swizzle B,M,S]"},
    {"gmma", 4, 4, do_gmma, "K|MN none|32|64|128 ROWS COLS"},
};

int cmd_layout(ag_cli *cli) {
  if (cli->npos < 1)
    return ag_cli_usage_error(cli, "missing subcommand (eval, compose, print, ...)");
  const sub *sb = NULL;
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
    if (!strcmp(subs[i].name, cli->pos[0]))
      sb = &subs[i];
  if (!sb)
    return ag_cli_usage_error(cli, "unknown subcommand '%s'", cli->pos[0]);
  int n = cli->npos - 1;
  if (n < sb->min || n > sb->max)
    return ag_cli_usage_error(cli, "usage: argus layout %s %s (got %d argument%s)", sb->name,
                              sb->args, n, n == 1 ? "" : "s");
  S s;
  memset(&s, 0, sizeof s);
  s.cli = cli;
  s.sub = sb->name;
  ag_arena_init(&s.arena, 0);
  ag_layout_ctx_init(&s.c, &s.arena);
  ag_diags_init(&s.d);
  int rc = sb->fn(&s, cli->pos + 1, n);
  ag_diags_release(&s.d);
  ag_layout_ctx_release(&s.c);
  ag_arena_release(&s.arena);
  return rc;
}
