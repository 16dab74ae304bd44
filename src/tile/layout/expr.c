/*
 * expr.c — symbolic integer expressions for the tile checker, and layout
 * evaluation on them.
 *
 * Expressions are hash-consed in the context's arena (c->xtab maps a node's
 * operator, value and operand pointers to the node), so structurally equal
 * expressions are the same pointer and building is O(1) expected per node.
 * Constructors fold constants and apply a few identities that hold for every
 * value under the semantics of ag_expr_eval (wrapping ADD/SUB/MUL/SHL,
 * truncating DIV/MOD, arithmetic SHR): x+0, x-0, x-x, x*1, x*0, x/1, x%1,
 * x^0, x^x, x&0, x&-1, x&x, x|0, x|x, x<<0, x>>0, (x+c1)+c2, (x*c1)*c2,
 * (x/c1)/c2 and (x%(k*c2))%c2 for positive constants. Folding uses the very
 * function ag_expr_eval uses, and never folds an undefined operation.
 *
 * Symbolic layout evaluation emits, for each flattened mode k of L,
 * ((idx / prefix_k) % extent_k) * stride_k (no modulus on the last mode),
 * which equals ag_layout_eval_index for every idx >= 0.
 */
#include "layout_int.h"

/* The semantics of one operator, shared by folding and evaluation. */
static int apply(ag_expr_op op, int64_t a, int64_t b, int64_t *r) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case AG_X_ADD: *r = (int64_t)(ua + ub); return 0;
  case AG_X_SUB: *r = (int64_t)(ua - ub); return 0;
  case AG_X_MUL: *r = (int64_t)(ua * ub); return 0;
  case AG_X_DIV:
  case AG_X_MOD:
    if (b == 0 || (a == INT64_MIN && b == -1))
      return AG_EUNDEFINED;
    *r = op == AG_X_DIV ? a / b : a % b;
    return 0;
  case AG_X_XOR: *r = (int64_t)(ua ^ ub); return 0;
  case AG_X_AND: *r = (int64_t)(ua & ub); return 0;
  case AG_X_OR: *r = (int64_t)(ua | ub); return 0;
  case AG_X_SHL:
  case AG_X_SHR:
    if (b < 0 || b > 63)
      return AG_EUNDEFINED;
    if (op == AG_X_SHL)
      *r = (int64_t)(ua << b);
    else
      *r = a < 0 ? ~(int64_t)(~ua >> b) : (int64_t)(ua >> b);
    return 0;
  default:
    return AG_EINVAL;
  }
}

/* ---------------------------------------------------------- hash consing */
/* An open-addressing table of node pointers (c->xtab, power-of-two
 * capacity, at most half full), keyed by the node's operator, value and
 * operand pointers, or by a symbol's name. */

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

static uint64_t hash_node(ag_expr_op op, int64_t v, const ag_expr *a, const ag_expr *b) {
  return mix((uint64_t)op * 0x9e3779b97f4a7c15ull ^ mix((uint64_t)v) ^
             mix((uint64_t)(uintptr_t)a + 0x632be59bd9b4e019ull) ^
             (mix((uint64_t)(uintptr_t)b) << 1));
}

static uint64_t hash_name(const char *name) {
  return mix(ag_hash64(name, strlen(name)) ^ (uint64_t)AG_X_SYM);
}

static uint64_t hash_of(const ag_expr *e) {
  return e->op == AG_X_SYM ? hash_name(e->name) : hash_node(e->op, e->value, e->a, e->b);
}

static int grow(ag_layout_ctx *c) {
  size_t cap = c->xcap ? 2 * c->xcap : 256;
  ag_expr **t = ag_calloc(cap, sizeof *t);
  if (!t)
    return AG_ENOMEM;
  for (size_t i = 0; i < c->xcap; i++) {
    ag_expr *e = c->xtab[i];
    if (!e)
      continue;
    size_t j = hash_of(e) & (cap - 1);
    while (t[j])
      j = (j + 1) & (cap - 1);
    t[j] = e;
  }
  ag_free(c->xtab);
  c->xtab = t;
  c->xcap = cap;
  return 0;
}

/* Returns the slot for the key: the existing node, or an empty slot. */
static ag_expr **slot(ag_layout_ctx *c, uint64_t h, ag_expr_op op, int64_t v, const ag_expr *a,
                      const ag_expr *b, const char *name) {
  size_t mask = c->xcap - 1;
  for (size_t j = h & mask;; j = (j + 1) & mask) {
    ag_expr *e = c->xtab[j];
    if (!e)
      return &c->xtab[j];
    if (e->op != op)
      continue;
    if (name ? !strcmp(e->name, name) : (e->value == v && e->a == a && e->b == b))
      return &c->xtab[j];
  }
}

static const ag_expr *intern(ag_layout_ctx *c, ag_expr_op op, int64_t v, const ag_expr *a,
                             const ag_expr *b) {
  if ((c->xcount + 1) * 2 > c->xcap && grow(c))
    return NULL;
  ag_expr **sl = slot(c, hash_node(op, v, a, b), op, v, a, b, NULL);
  if (*sl)
    return *sl;
  ag_expr *e = ag_arena_alloc(c->arena, sizeof *e);
  if (!e)
    return NULL;
  e->op = op;
  e->value = v;
  e->a = a;
  e->b = b;
  *sl = e;
  c->xcount++;
  return e;
}

const ag_expr *ag_expr_const(ag_layout_ctx *c, int64_t v) {
  return intern(c, AG_X_CONST, v, NULL, NULL);
}

const ag_expr *ag_expr_sym(ag_layout_ctx *c, const char *name) {
  if (!name || ((c->xcount + 1) * 2 > c->xcap && grow(c)))
    return NULL;
  ag_expr **sl = slot(c, hash_name(name), AG_X_SYM, 0, NULL, NULL, name);
  if (*sl)
    return *sl;
  ag_expr *e = ag_arena_alloc(c->arena, sizeof *e);
  if (!e || !(e->name = ag_arena_strdup(c->arena, name)))
    return NULL;
  e->op = AG_X_SYM;
  *sl = e;
  c->xcount++;
  return e;
}

int ag_expr_is_const(const ag_expr *e, int64_t *v) {
  if (e && e->op == AG_X_CONST) {
    if (v)
      *v = e->value;
    return 1;
  }
  return 0;
}

static int commutative(ag_expr_op op) {
  return op == AG_X_ADD || op == AG_X_MUL || op == AG_X_XOR || op == AG_X_AND ||
         op == AG_X_OR;
}

const ag_expr *ag_expr_bin(ag_layout_ctx *c, ag_expr_op op, const ag_expr *a,
                           const ag_expr *b) {
  if (!a || !b || op < AG_X_ADD || op > AG_X_SHR)
    return NULL;
  int64_t va = 0, vb = 0, r;
  int ca = ag_expr_is_const(a, &va), cb = ag_expr_is_const(b, &vb);
  if (ca && cb) {
    if (apply(op, va, vb, &r) == 0)
      return ag_expr_const(c, r);
    return intern(c, op, 0, a, b); /* undefined: kept for evaluation to report */
  }
  if (commutative(op) && ca) { /* constants go right */
    const ag_expr *t = a;
    a = b;
    b = t;
    cb = 1;
    vb = va;
  }
  int64_t ka = 0;
  int a_has_const_right = a->op != AG_X_CONST && a->op != AG_X_SYM && ag_expr_is_const(a->b, &ka);
  switch (op) {
  case AG_X_ADD:
    if (cb && vb == 0)
      return a;
    if (cb && a->op == AG_X_ADD && a_has_const_right)
      return ag_expr_bin(c, AG_X_ADD, a->a, ag_expr_const(c, (int64_t)((uint64_t)ka + (uint64_t)vb)));
    break;
  case AG_X_SUB:
    if (a == b)
      return ag_expr_const(c, 0);
    if (cb)
      return ag_expr_bin(c, AG_X_ADD, a, ag_expr_const(c, (int64_t)(0 - (uint64_t)vb)));
    break;
  case AG_X_MUL:
    if (cb && vb == 0)
      return b;
    if (cb && vb == 1)
      return a;
    if (cb && a->op == AG_X_MUL && a_has_const_right)
      return ag_expr_bin(c, AG_X_MUL, a->a, ag_expr_const(c, (int64_t)((uint64_t)ka * (uint64_t)vb)));
    break;
  case AG_X_DIV:
    if (cb && vb == 1)
      return a;
    if (cb && vb > 0 && a->op == AG_X_DIV && a_has_const_right && ka > 0 &&
        !__builtin_mul_overflow(ka, vb, &r))
      return ag_expr_bin(c, AG_X_DIV, a->a, ag_expr_const(c, r));
    break;
  case AG_X_MOD:
    if (cb && vb == 1)
      return ag_expr_const(c, 0);
    if (cb && vb > 0 && a->op == AG_X_MOD && a_has_const_right && ka > 0 && ka % vb == 0)
      return ag_expr_bin(c, AG_X_MOD, a->a, b);
    break;
  case AG_X_XOR:
    if (a == b)
      return ag_expr_const(c, 0);
    if (cb && vb == 0)
      return a;
    break;
  case AG_X_AND:
    if (a == b)
      return a;
    if (cb && vb == 0)
      return b;
    if (cb && vb == -1)
      return a;
    break;
  case AG_X_OR:
    if (a == b || (cb && vb == 0))
      return a;
    break;
  case AG_X_SHL:
  case AG_X_SHR:
    if (cb && vb == 0)
      return a;
    break;
  default:
    break;
  }
  return intern(c, op, 0, a, b);
}

int ag_expr_eval(const ag_expr *e, ag_expr_env env, void *ud, int64_t *out) {
  *out = 0;
  if (!e)
    return AG_EINVAL;
  switch (e->op) {
  case AG_X_CONST:
    *out = e->value;
    return 0;
  case AG_X_SYM:
    if (!env || env(ud, e->name, out)) {
      *out = 0;
      return AG_ENOTFOUND;
    }
    return 0;
  default: {
    int64_t a, b;
    int rc = ag_expr_eval(e->a, env, ud, &a);
    if (!rc)
      rc = ag_expr_eval(e->b, env, ud, &b);
    if (!rc)
      rc = apply(e->op, a, b, out);
    if (rc)
      *out = 0;
    return rc;
  }
  }
}

static int prec(ag_expr_op op) {
  switch (op) {
  case AG_X_MUL: case AG_X_DIV: case AG_X_MOD: return 10;
  case AG_X_ADD: case AG_X_SUB: return 9;
  case AG_X_SHL: case AG_X_SHR: return 8;
  case AG_X_AND: return 7;
  case AG_X_XOR: return 6;
  case AG_X_OR: return 5;
  default: return 11;
  }
}

static const char *op_text(ag_expr_op op) {
  static const char *t[] = {"", "", " + ", " - ", " * ", " / ", " % ",
                            " ^ ", " & ", " | ", " << ", " >> "};
  return t[op];
}

static void print_rec(const ag_expr *e, ag_str *out, ag_expr_op parent, int right) {
  if (e->op == AG_X_CONST) {
    if (e->value < 0 && parent != AG_X_CONST)
      ag_str_printf(out, "(%lld)", (long long)e->value);
    else
      ag_str_printf(out, "%lld", (long long)e->value);
    return;
  }
  if (e->op == AG_X_SYM) {
    ag_str_puts(out, e->name);
    return;
  }
  int p = prec(e->op), pp = parent == AG_X_CONST ? 0 : prec(parent);
  int paren = p < pp || (p == pp && right && !(e->op == parent && commutative(e->op)));
  if (paren)
    ag_str_putc(out, '(');
  print_rec(e->a, out, e->op, 0);
  ag_str_puts(out, op_text(e->op));
  print_rec(e->b, out, e->op, 1);
  if (paren)
    ag_str_putc(out, ')');
}

int ag_expr_print(const ag_expr *e, ag_str *out) {
  if (!e)
    return AG_EINVAL;
  print_rec(e, out, AG_X_CONST, 0);
  return out->oom ? AG_ENOMEM : 0;
}

/* ------------------------------------------------- symbolic layout evaluation */

static int eval_sub_x(ag_layout_ctx *c, const ag_layout *l, const ag_expr *idx,
                      const ag_expr **off) {
  ag__flat f;
  int rc = ag__flatten(c, l, &f);
  if (rc)
    return rc;
  const ag_expr *acc = ag_expr_const(c, 0);
  int64_t pre = 1;
  for (int k = 0; k < f.n && acc; k++) {
    const ag_expr *q = pre == 1 ? idx : ag_expr_bin(c, AG_X_DIV, idx, ag_expr_const(c, pre));
    const ag_expr *crd = k + 1 < f.n ? ag_expr_bin(c, AG_X_MOD, q, ag_expr_const(c, f.s[k])) : q;
    acc = ag_expr_bin(c, AG_X_ADD, acc, ag_expr_bin(c, AG_X_MUL, crd, ag_expr_const(c, f.d[k])));
    pre *= f.s[k]; /* <= size(l), which fits */
  }
  if (!acc)
    return ag__loom(c);
  *off = acc;
  return 0;
}

int ag_layout_eval_index_x(ag_layout_ctx *c, const ag_layout *l, const ag_expr *idx,
                           const ag_expr **offset) {
  *offset = NULL;
  if (!idx)
    return ag__loom(c);
  return eval_sub_x(c, l, idx, offset);
}

static int crd_x(ag_layout_ctx *c, const ag_xtuple *x, ag_tuple *s, ag_tuple *d,
                 const ag_expr **acc) {
  if (x->is_leaf) {
    if (!x->value)
      return ag__loom(c);
    ag_layout sub = {s, d};
    const ag_expr *o;
    int rc = eval_sub_x(c, &sub, x->value, &o);
    if (rc)
      return rc;
    *acc = ag_expr_bin(c, AG_X_ADD, *acc, o);
    return *acc ? 0 : ag__loom(c);
  }
  if (s->is_leaf || s->n != x->n) {
    ag_str st = AG_STR_INIT;
    ag_tuple_print(s, &st);
    int rc = ag__lfail(c, AG_EINVAL, "the coordinate has %d modes where the shape %s has %d",
                       x->n, ag_str_cstr(&st), ag__rank(s));
    ag_str_release(&st);
    return rc;
  }
  for (int i = 0; i < x->n; i++) {
    int rc = crd_x(c, x->child[i], s->child[i], d->child[i], acc);
    if (rc)
      return rc;
  }
  return 0;
}

int ag_layout_eval_coord_x(ag_layout_ctx *c, const ag_layout *l, const ag_xtuple *coord,
                           const ag_expr **offset) {
  *offset = NULL;
  const ag_expr *acc = ag_expr_const(c, 0);
  if (!acc || !coord)
    return ag__loom(c);
  int rc = crd_x(c, coord, l->shape, l->stride, &acc);
  if (!rc)
    *offset = acc;
  return rc;
}

const ag_expr *ag_swizzle_apply_x(ag_layout_ctx *c, ag_swizzle s, const ag_expr *x) {
  if (!x)
    return NULL;
  if (s.b <= 0)
    return x;
  uint64_t bits = ((uint64_t)1 << s.b) - 1;
  if (s.s >= 0) {
    const ag_expr *y = ag_expr_bin(c, AG_X_AND, x, ag_expr_const(c, (int64_t)(bits << (s.m + s.s))));
    return ag_expr_bin(c, AG_X_XOR, x, ag_expr_bin(c, AG_X_SHR, y, ag_expr_const(c, s.s)));
  }
  const ag_expr *y = ag_expr_bin(c, AG_X_AND, x, ag_expr_const(c, (int64_t)(bits << s.m)));
  return ag_expr_bin(c, AG_X_XOR, x, ag_expr_bin(c, AG_X_SHL, y, ag_expr_const(c, -s.s)));
}
