/*
 * parse.c — recursive-descent parser for the tile DSL: tokens to an AST in
 * the program's arena (grammar: docs/tile-dsl.md).
 *
 * Error handling: the first error in a statement adds a diagnostic and the
 * parser skips to the end of that logical line (and over any block indented
 * under it), then goes on, so one run reports several errors; it stops after
 * AG_TILE_MAX_ERRORS. Every loop consumes a token or exits, and recursion is
 * bounded by AG_TILE_MAX_DEPTH, so no input makes it hang or overflow the
 * stack. Out of memory anywhere makes ag_tile_parse return AG_ENOMEM.
 */
#include "front.h"

#include <setjmp.h>
#include <string.h>

typedef struct parser {
  ag_tile_program *prog;
  ag_diags *diags;
  ag__token *t; /* tokens */
  size_t n, i;
  int depth;
  int nerrors;
  jmp_buf oom;   /* out of memory: unwinds the whole parse */
  jmp_buf stmt;  /* a syntax error: unwinds to the statement loop */
  int in_stmt;
} parser;

static ag__token *peek(parser *p) { return &p->t[p->i]; }
static ag__token *peek2(parser *p) { return &p->t[p->i + 1 < p->n ? p->i + 1 : p->i]; }
static ag__tk kind(parser *p) { return p->t[p->i].kind; }
static ag__token *advance(parser *p) {
  ag__token *t = &p->t[p->i];
  if (p->i + 1 < p->n)
    p->i++;
  return t;
}
static int accept(parser *p, ag__tk k) {
  if (kind(p) == k) {
    advance(p);
    return 1;
  }
  return 0;
}

static void *alloc(parser *p, size_t n) {
  void *r = ag_arena_alloc(&p->prog->arena, n);
  if (!r)
    longjmp(p->oom, 1);
  return r;
}

static void diag_at(parser *p, int line, int col, const char *fmt, ...) AG_PRINTF(4, 5);
static void diag_at(parser *p, int line, int col, const char *fmt, ...) {
  p->nerrors++;
  if (p->nerrors > AG_TILE_MAX_ERRORS)
    return;
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t ll = 0;
  const char *src = ag_tile_srcline(p->prog, line, &ll);
  if (ag_diags_add(p->diags, AG_SEV_ERROR, p->prog->file, line, col, src, ll, "%s", msg))
    longjmp(p->oom, 1);
}

/* Describes a token for messages: "name 'foo'", "end of line", "')'". */
static void describe(const ag__token *t, char *buf, size_t n) {
  if (t->kind == TK_NAME || t->kind == TK_INT || t->kind == TK_FLOAT)
    snprintf(buf, n, "%s '%.*s'", ag__tk_name(t->kind), (int)(t->len > 40 ? 40 : t->len),
             t->start);
  else
    snprintf(buf, n, "%s", ag__tk_name(t->kind));
}

static _Noreturn void syntax_error(parser *p, const char *fmt, ...) AG_PRINTF(2, 3);
static _Noreturn void syntax_error(parser *p, const char *fmt, ...) {
  char msg[256], got[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ag__token *t = peek(p);
  describe(t, got, sizeof got);
  diag_at(p, t->line, t->col, "%s, found %s", msg, got);
  longjmp(p->stmt, 1);
}

static void expect(parser *p, ag__tk k, const char *context) {
  if (!accept(p, k))
    syntax_error(p, "expected %s %s", ag__tk_name(k), context);
}

static ag_tile_node *node(parser *p, ag_tile_kind k, const ag__token *at) {
  ag_tile_node *n = alloc(p, sizeof *n);
  n->kind = k;
  n->line = at->line;
  n->col = at->col;
  return n;
}

static const char *tok_str(parser *p, const ag__token *t) {
  char *s = ag_arena_strndup(&p->prog->arena, t->start, t->len);
  if (!s)
    longjmp(p->oom, 1);
  return s;
}

static void enter(parser *p) {
  if (++p->depth > AG_TILE_MAX_DEPTH) {
    p->depth = 0; /* reset so the recovery path can parse again */
    syntax_error(p,
                 "expression or block nested deeper than %d levels (each link of an operator, "
                 "comparison or subscript chain counts as one); split it with intermediate "
                 "assignments",
                 AG_TILE_MAX_DEPTH);
  }
}
static void leave(parser *p) { p->depth--; }

/* ------------------------------------------------------------ expressions */
static ag_tile_node *expr(parser *p);

/* Vectors hold heap memory; a longjmp out of a list parse would leak it, so
 * lists are parsed into the arena directly with a small growable buffer
 * living in the arena too. */
typedef struct alist {
  ag_tile_node **v;
  int n, cap;
} alist;

static void apush(parser *p, alist *l, ag_tile_node *n) {
  if (l->n == l->cap) {
    int nc = l->cap ? l->cap * 2 : 4;
    ag_tile_node **nv = alloc(p, (size_t)nc * sizeof *nv);
    if (l->n)
      memcpy(nv, l->v, (size_t)l->n * sizeof *nv);
    l->v = nv;
    l->cap = nc;
  }
  l->v[l->n++] = n;
}
static ag_tile_list afinish(alist *l) {
  ag_tile_list r = {l->v, l->n};
  return r;
}

static ag_tile_node *call_args(parser *p, ag_tile_node *callee, const ag__token *at) {
  ag_tile_node *n = node(p, AG_TN_CALL, at);
  n->a = callee;
  alist args = {0};
  int seen_kw = 0;
  while (kind(p) != TK_RPAREN) {
    if (kind(p) == TK_NAME && peek2(p)->kind == TK_ASSIGN) {
      ag__token *nt = advance(p);
      advance(p);
      ag_tile_node *kw = node(p, AG_TN_KWARG, nt);
      kw->name = tok_str(p, nt);
      kw->a = expr(p);
      apush(p, &args, kw);
      seen_kw = 1;
    } else {
      if (seen_kw)
        syntax_error(p, "positional argument after a keyword argument");
      apush(p, &args, expr(p));
    }
    if (!accept(p, TK_COMMA))
      break;
  }
  expect(p, TK_RPAREN, "to close the argument list");
  n->list = afinish(&args);
  return n;
}

static ag_tile_node *index_item(parser *p) {
  ag__token *at = peek(p);
  ag_tile_node *a = NULL;
  if (kind(p) != TK_COLON)
    a = expr(p);
  if (!accept(p, TK_COLON))
    return a;
  ag_tile_node *s = node(p, AG_TN_SLICE, at);
  s->a = a;
  if (kind(p) != TK_COMMA && kind(p) != TK_RBRACK)
    s->b = expr(p);
  return s;
}

static ag_tile_node *atom(parser *p) {
  ag__token *t = peek(p);
  ag_tile_node *n;
  switch (t->kind) {
  case TK_NAME:
    advance(p);
    n = node(p, AG_TN_NAME, t);
    n->name = tok_str(p, t);
    return n;
  case TK_INT:
    advance(p);
    n = node(p, AG_TN_INT, t);
    n->ival = t->ival;
    return n;
  case TK_FLOAT:
    advance(p);
    n = node(p, AG_TN_FLOAT, t);
    n->fval = t->fval;
    return n;
  case TK_STR:
    advance(p);
    n = node(p, AG_TN_STR, t);
    n->name = tok_str(p, t);
    return n;
  case TK_TRUE:
  case TK_FALSE:
    advance(p);
    n = node(p, AG_TN_BOOL, t);
    n->ival = t->kind == TK_TRUE;
    return n;
  case TK_LPAREN: {
    advance(p);
    if (accept(p, TK_RPAREN)) {
      n = node(p, AG_TN_TUPLE, t);
      return n;
    }
    ag_tile_node *first = expr(p);
    if (accept(p, TK_RPAREN))
      return first; /* parenthesized expression */
    if (kind(p) != TK_COMMA)
      syntax_error(p, "expected ',' or ')' in parentheses");
    n = node(p, AG_TN_TUPLE, t);
    alist items = {0};
    apush(p, &items, first);
    while (accept(p, TK_COMMA)) {
      if (kind(p) == TK_RPAREN)
        break;
      apush(p, &items, expr(p));
    }
    expect(p, TK_RPAREN, "to close the tuple");
    n->list = afinish(&items);
    return n;
  }
  default:
    syntax_error(p, "expected an expression");
  }
}

/* Chains (a.b[c](d)..., a + b + ..., a < b < ..., a and b and ...) build
 * trees as deep as they are long although the loops that parse them do not
 * recurse: each link counts as one level of nesting until the chain ends, so
 * the tree's depth stays within twice AG_TILE_MAX_DEPTH and no later pass
 * that walks it recursively can overflow the stack. */
static void chain(parser *p, int *links) {
  enter(p);
  ++*links;
}
static ag_tile_node *unchain(parser *p, int links, ag_tile_node *n) {
  p->depth -= links;
  return n;
}

static ag_tile_node *postfix(parser *p) {
  ag_tile_node *n = atom(p);
  int links = 0;
  for (;;) {
    /* calls, indexing and attributes sit where their base starts */
    ag__token pos = *peek(p);
    pos.line = n->line;
    pos.col = n->col;
    ag__token *t = &pos;
    if (kind(p) != TK_LPAREN && kind(p) != TK_LBRACK && kind(p) != TK_DOT)
      return unchain(p, links, n);
    chain(p, &links);
    if (accept(p, TK_LPAREN)) {
      enter(p);
      n = call_args(p, n, t);
      leave(p);
    } else if (accept(p, TK_LBRACK)) {
      enter(p);
      ag_tile_node *ix = node(p, AG_TN_INDEX, t);
      ix->a = n;
      alist items = {0};
      if (kind(p) == TK_RBRACK)
        syntax_error(p, "expected an index");
      do {
        if (kind(p) == TK_RBRACK)
          break;
        apush(p, &items, index_item(p));
      } while (accept(p, TK_COMMA));
      expect(p, TK_RBRACK, "to close the index");
      ix->list = afinish(&items);
      n = ix;
      leave(p);
    } else if (accept(p, TK_DOT)) {
      ag__token *nt = peek(p);
      if (nt->kind != TK_NAME)
        syntax_error(p, "expected an attribute name after '.'");
      advance(p);
      ag_tile_node *at = node(p, AG_TN_ATTR, t);
      at->a = n;
      at->name = tok_str(p, nt);
      n = at;
    } else {
      return unchain(p, links, n);
    }
  }
}

static ag_tile_node *unary(parser *p) {
  ag__token *t = peek(p);
  ag_tile_op op = t->kind == TK_MINUS ? AG_OP_NEG
                  : t->kind == TK_PLUS ? AG_OP_POS
                  : t->kind == TK_TILDE ? AG_OP_INV
                                        : AG_OP_NONE;
  if (op == AG_OP_NONE)
    return postfix(p);
  advance(p);
  enter(p);
  ag_tile_node *n = node(p, AG_TN_UNOP, t);
  n->op = op;
  n->a = unary(p);
  leave(p);
  return n;
}

/* Binary levels, loosest last. */
typedef struct binlevel {
  ag__tk tk[4];
  ag_tile_op op[4];
} binlevel;
static const binlevel levels[] = {
    {{TK_STAR, TK_SLASH, TK_DSLASH, TK_PERCENT}, {AG_OP_MUL, AG_OP_DIV, AG_OP_FLOORDIV, AG_OP_MOD}},
    {{TK_PLUS, TK_MINUS}, {AG_OP_ADD, AG_OP_SUB}},
    {{TK_SHL, TK_SHR}, {AG_OP_SHL, AG_OP_SHR}},
    {{TK_AMP}, {AG_OP_AND}},
    {{TK_CARET}, {AG_OP_XOR}},
    {{TK_PIPE}, {AG_OP_OR}},
};
#define NLEVELS ((int)(sizeof levels / sizeof levels[0]))

static ag_tile_node *binary(parser *p, int level) {
  if (level < 0)
    return unary(p);
  ag_tile_node *lhs = binary(p, level - 1);
  int links = 0;
  for (;;) {
    ag__token *t = peek(p);
    ag_tile_op op = AG_OP_NONE;
    for (int k = 0; k < 4 && levels[level].tk[k]; k++)
      if (t->kind == levels[level].tk[k])
        op = levels[level].op[k];
    if (op == AG_OP_NONE)
      return unchain(p, links, lhs);
    advance(p);
    chain(p, &links);
    enter(p);
    ag_tile_node *n = node(p, AG_TN_BINOP, t);
    n->op = op;
    n->a = lhs;
    n->b = binary(p, level - 1);
    leave(p);
    lhs = n;
  }
}

static ag_tile_op cmp_op(ag__tk k) {
  switch (k) {
  case TK_EQ: return AG_OP_EQ;
  case TK_NE: return AG_OP_NE;
  case TK_LT: return AG_OP_LT;
  case TK_LE: return AG_OP_LE;
  case TK_GT: return AG_OP_GT;
  case TK_GE: return AG_OP_GE;
  default: return AG_OP_NONE;
  }
}

/* a < b <= c  is  (a < b) and (b <= c), as in Python. */
static ag_tile_node *comparison(parser *p) {
  ag_tile_node *lhs = binary(p, NLEVELS - 1);
  ag_tile_node *result = NULL;
  int links = 0;
  for (;;) {
    ag__token *t = peek(p);
    ag_tile_op op = cmp_op(t->kind);
    if (op == AG_OP_NONE)
      return unchain(p, links, result ? result : lhs);
    advance(p);
    chain(p, &links);
    enter(p);
    ag_tile_node *c = node(p, AG_TN_CMP, t);
    c->op = op;
    c->a = lhs;
    c->b = binary(p, NLEVELS - 1);
    leave(p);
    if (result) {
      ag_tile_node *land = node(p, AG_TN_LAND, t);
      land->a = result;
      land->b = c;
      result = land;
    } else {
      result = c;
    }
    lhs = c->b;
  }
}

static ag_tile_node *not_expr(parser *p) {
  ag__token *t = peek(p);
  if (!accept(p, TK_NOT))
    return comparison(p);
  enter(p);
  ag_tile_node *n = node(p, AG_TN_LNOT, t);
  n->a = not_expr(p);
  leave(p);
  return n;
}

/* `and` binds tighter than `or`; both are left-associative. */
static ag_tile_node *logic_expr(parser *p, int is_or) {
  ag_tile_node *lhs = is_or ? logic_expr(p, 0) : not_expr(p);
  int links = 0;
  for (;;) {
    ag__token *t = peek(p);
    if (!accept(p, is_or ? TK_OR : TK_AND))
      return unchain(p, links, lhs);
    chain(p, &links);
    enter(p);
    ag_tile_node *n = node(p, is_or ? AG_TN_LOR : AG_TN_LAND, t);
    n->a = lhs;
    n->b = is_or ? logic_expr(p, 0) : not_expr(p);
    leave(p);
    lhs = n;
  }
}

static ag_tile_node *or_expr(parser *p) { return logic_expr(p, 1); }

/* a if c else b */
static ag_tile_node *expr(parser *p) {
  enter(p);
  ag_tile_node *a = or_expr(p);
  ag__token *t = peek(p);
  if (accept(p, TK_IF)) {
    ag_tile_node *n = node(p, AG_TN_TERNARY, t);
    n->a = a;
    n->b = or_expr(p);
    expect(p, TK_ELSE, "in a conditional expression 'x if c else y'");
    n->c = expr(p);
    a = n;
  }
  leave(p);
  return a;
}

/* An item of an expression list: expr [-> expr]. */
static ag_tile_node *list_item(parser *p) {
  ag_tile_node *a = expr(p);
  ag__token *t = peek(p);
  if (!accept(p, TK_ARROW))
    return a;
  ag_tile_node *n = node(p, AG_TN_ARROW, t);
  n->a = a;
  n->b = expr(p);
  return n;
}

static ag_tile_list expr_list(parser *p) {
  alist l = {0};
  apush(p, &l, list_item(p));
  while (accept(p, TK_COMMA)) {
    if (kind(p) == TK_NEWLINE || kind(p) == TK_ASSIGN || kind(p) == TK_EOF)
      break;
    apush(p, &l, list_item(p));
  }
  return afinish(&l);
}

/* ------------------------------------------------------------- statements */
static void block(parser *p, ag_tile_list *out);
static void kernel(parser *p, alist *out);

static void end_of_statement(parser *p) {
  if (kind(p) == TK_EOF)
    return;
  if (!accept(p, TK_NEWLINE))
    syntax_error(p, "expected end of line after the statement");
}

static int is_target(const ag_tile_node *n) {
  return n->kind == AG_TN_NAME || n->kind == AG_TN_INDEX;
}

static ag_tile_node *simple_statement(parser *p) {
  ag__token *t = peek(p);
  ag_tile_node *n;
  switch (t->kind) {
  case TK_PASS:
    advance(p);
    return node(p, AG_TN_PASS, t);
  case TK_ASSERT:
    advance(p);
    n = node(p, AG_TN_ASSERT, t);
    n->a = expr(p);
    if (accept(p, TK_COMMA)) {
      if (kind(p) != TK_STR)
        syntax_error(p, "expected a message string after 'assert condition,'");
      n->b = atom(p);
    }
    return n;
  case TK_ASSUME:
    advance(p);
    n = node(p, AG_TN_ASSUME, t);
    n->a = expr(p);
    return n;
  default:
    break;
  }
  ag_tile_list lhs = expr_list(p);
  ag__token *eq = peek(p);
  ag_tile_op aug = eq->kind == TK_PLUSEQ ? AG_OP_ADD
                   : eq->kind == TK_MINUSEQ ? AG_OP_SUB
                   : eq->kind == TK_STAREQ ? AG_OP_MUL
                                           : AG_OP_NONE;
  if (eq->kind != TK_ASSIGN && aug == AG_OP_NONE) {
    if (lhs.n != 1 || lhs.v[0]->kind == AG_TN_ARROW) {
      diag_at(p, t->line, t->col,
              "a list of expressions or a tag function is not a statement; did you mean "
              "'name = ...'?");
      longjmp(p->stmt, 1);
    }
    n = node(p, AG_TN_EXPR, t);
    n->a = lhs.v[0];
    return n;
  }
  advance(p);
  for (int i = 0; i < lhs.n; i++)
    if (!is_target(lhs.v[i])) {
      diag_at(p, lhs.v[i]->line, lhs.v[i]->col,
              "cannot assign to this expression (a target is a name or an indexed tile "
              "such as 'x[i, j]')");
      longjmp(p->stmt, 1);
    }
  if (aug != AG_OP_NONE && lhs.n != 1) {
    diag_at(p, eq->line, eq->col, "'%.*s' takes exactly one target", (int)eq->len, eq->start);
    longjmp(p->stmt, 1);
  }
  n = node(p, AG_TN_ASSIGN, t);
  n->op = aug;
  n->list = lhs;
  n->list2 = expr_list(p);
  if (kind(p) == TK_ASSIGN)
    syntax_error(p, "chained assignment 'a = b = c' is not supported");
  if (n->list2.n != n->list.n && n->list2.n != 1)
    syntax_error(p, "%d targets but %d values", n->list.n, n->list2.n);
  return n;
}

/* Parses one statement; appends to out. */
static void statement(parser *p, alist *out) {
  ag__token *t = peek(p);
  ag_tile_node *n;
  switch (t->kind) {
  case TK_FOR: {
    advance(p);
    n = node(p, AG_TN_FOR, t);
    ag__token *v = peek(p);
    if (v->kind != TK_NAME)
      syntax_error(p, "expected a loop variable name after 'for'");
    advance(p);
    n->name = tok_str(p, v);
    expect(p, TK_IN, "after the loop variable");
    n->a = expr(p);
    expect(p, TK_COLON, "after the loop header");
    enter(p);
    block(p, &n->list);
    leave(p);
    apush(p, out, n);
    return;
  }
  case TK_IF: {
    advance(p);
    n = node(p, AG_TN_IF, t);
    n->a = expr(p);
    expect(p, TK_COLON, "after the condition");
    enter(p);
    block(p, &n->list);
    ag_tile_node *cur = n;
    for (;;) {
      ag__token *e = peek(p);
      if (accept(p, TK_ELIF)) {
        ag_tile_node *ei = node(p, AG_TN_IF, e);
        ei->a = expr(p);
        expect(p, TK_COLON, "after the condition");
        block(p, &ei->list);
        ag_tile_node **one = alloc(p, sizeof *one);
        one[0] = ei;
        cur->list2.v = one;
        cur->list2.n = 1;
        cur = ei;
      } else if (accept(p, TK_ELSE)) {
        expect(p, TK_COLON, "after 'else'");
        block(p, &cur->list2);
        break;
      } else {
        break;
      }
    }
    leave(p);
    apush(p, out, n);
    return;
  }
  case TK_NAME:
    /* region("name"): a block the lowering marks as a region (docs/tile-dsl.md) */
    if (t->len == 6 && !memcmp(t->start, "region", 6) && p->i + 4 < p->n &&
        p->t[p->i + 1].kind == TK_LPAREN && p->t[p->i + 2].kind == TK_STR &&
        p->t[p->i + 3].kind == TK_RPAREN && p->t[p->i + 4].kind == TK_COLON) {
      ag__token *s = &p->t[p->i + 2];
      n = node(p, AG_TN_REGION, t);
      n->name = tok_str(p, s);
      int ok = n->name[0] == '_' || (unsigned)((n->name[0] | 32) - 'a') < 26u;
      for (const char *c = n->name; ok && *c; c++)
        ok = *c == '_' || *c == '.' || *c == '-' || (unsigned)((*c | 32) - 'a') < 26u ||
             (unsigned)(*c - '0') < 10u;
      if (!ok) {
        diag_at(p, s->line, s->col,
                "region name '%s' must be a name ([A-Za-z_][A-Za-z0-9_.-]*, no '/')", n->name);
        longjmp(p->stmt, 1);
      }
      for (int k = 0; k < 5; k++)
        advance(p);
      enter(p);
      block(p, &n->list);
      leave(p);
      apush(p, out, n);
      return;
    }
    break;
  case TK_DEF:
  case TK_AT:
    syntax_error(p, "a kernel ('def') must be at the top level of the file");
  case TK_ELSE:
  case TK_ELIF:
    syntax_error(p, "'%s' without a matching 'if'", t->kind == TK_ELSE ? "else" : "elif");
  case TK_INDENT:
    syntax_error(p, "unexpected indent");
  default:
    break;
  }
  /* simple statements; several may share a line when separated by ';'? No:
   * one per line, as in most style guides. */
  n = simple_statement(p);
  apush(p, out, n);
  end_of_statement(p);
}

/* Skips the rest of a broken statement: up to and including the NEWLINE
 * that ends it, and any block indented under it. */
static void recover(parser *p) {
  int depth = 0;
  for (;;) {
    ag__tk k = kind(p);
    if (k == TK_EOF)
      return;
    if (k == TK_INDENT)
      depth++;
    if (k == TK_DEDENT) {
      if (depth == 0)
        return;
      depth--;
      advance(p);
      if (depth == 0 && kind(p) != TK_INDENT)
        return;
      continue;
    }
    advance(p);
    if (k == TK_NEWLINE && depth == 0 && kind(p) != TK_INDENT)
      return;
  }
}

/* Statements up to a DEDENT (or EOF). Each statement is a recovery point. */
static void statements(parser *p, alist *out, int top) {
  while (kind(p) != TK_EOF && kind(p) != TK_DEDENT) {
    if (p->nerrors > AG_TILE_MAX_ERRORS)
      return;
    jmp_buf saved;
    memcpy(saved, p->stmt, sizeof saved);
    volatile int saved_depth = p->depth;
    volatile size_t before = p->i;
    if (setjmp(p->stmt) == 0) {
      if (top && (kind(p) == TK_DEF || kind(p) == TK_AT)) {
        kernel(p, out);
      } else {
        statement(p, out);
      }
    } else {
      p->depth = saved_depth;
      recover(p);
      if (p->i == before && kind(p) != TK_EOF && kind(p) != TK_DEDENT)
        advance(p); /* always make progress */
    }
    memcpy(p->stmt, saved, sizeof saved);
  }
}

static void block(parser *p, ag_tile_list *out) {
  alist body = {0};
  if (!accept(p, TK_NEWLINE)) {
    /* one-line suite: "for i in range(4): x = 1" */
    ag_tile_node *n = simple_statement(p);
    apush(p, &body, n);
    end_of_statement(p);
    *out = afinish(&body);
    return;
  }
  if (!accept(p, TK_INDENT))
    syntax_error(p, "expected an indented block");
  int errors_before = p->nerrors;
  statements(p, &body, 0);
  if (!accept(p, TK_DEDENT) && kind(p) != TK_EOF)
    syntax_error(p, "expected the end of the indented block");
  if (body.n == 0 && p->nerrors == errors_before) {
    ag__token *t = peek(p);
    diag_at(p, t->line, t->col, "empty block (write 'pass')");
  }
  *out = afinish(&body);
}

/* {@decorator(args) NEWLINE} def name(params): block */
static void kernel(parser *p, alist *out) {
  ag_tile_node *decos = NULL;
  alist dl = {0};
  ag__token *t = peek(p);
  while (kind(p) == TK_AT) {
    ag__token *at = advance(p);
    ag__token *nt = peek(p);
    if (nt->kind != TK_NAME)
      syntax_error(p, "expected a decorator name after '@'");
    ag_tile_node *deco = postfix(p);
    if (deco->kind != AG_TN_CALL)
      syntax_error(p, "expected a decorator call such as '@threads(128)'");
    expect(p, TK_NEWLINE, "after the decorator");
    if (!decos)
      decos = node(p, AG_TN_TUPLE, at);
    apush(p, &dl, deco);
    t = peek(p);
  }
  if (decos)
    decos->list = afinish(&dl);
  expect(p, TK_DEF, "to start a kernel");
  ag_tile_node *k = node(p, AG_TN_KERNEL, t);
  k->a = decos;
  ag__token *nt = peek(p);
  if (nt->kind != TK_NAME)
    syntax_error(p, "expected the kernel name after 'def'");
  advance(p);
  k->name = tok_str(p, nt);
  expect(p, TK_LPAREN, "after the kernel name");
  alist params = {0};
  while (kind(p) != TK_RPAREN) {
    ag__token *pt = peek(p);
    if (pt->kind != TK_NAME)
      syntax_error(p, "expected a parameter name");
    advance(p);
    ag_tile_node *prm = node(p, AG_TN_PARAM, pt);
    prm->name = tok_str(p, pt);
    expect(p, TK_COLON, "after the parameter name (parameters are 'name: Tensor(...)' or "
                        "'name: const = value')");
    prm->a = expr(p);
    if (accept(p, TK_ASSIGN))
      prm->b = expr(p);
    apush(p, &params, prm);
    if (!accept(p, TK_COMMA))
      break;
  }
  expect(p, TK_RPAREN, "to close the parameter list");
  expect(p, TK_COLON, "after the kernel signature");
  k->list = afinish(&params);
  block(p, &k->list2);
  apush(p, out, k);
}

int ag_tile_parse(const char *src, size_t len, const char *file, ag_diags *d,
                  ag_tile_program **out) {
  *out = NULL;
  ag_tile_program *prog = ag_calloc(1, sizeof *prog);
  if (!prog)
    return AG_ENOMEM;
  ag_arena_init(&prog->arena, 0);
  prog->src = ag_arena_strndup(&prog->arena, src, len);
  prog->file = file ? ag_arena_strdup(&prog->arena, file) : NULL;
  prog->len = len;
  if (!prog->src || (file && !prog->file)) {
    ag_tile_program_free(prog);
    return AG_ENOMEM;
  }
  /* keep embedded NULs out of C-string handling: they are lexed as errors */
  ag__lexer lx;
  memset(&lx, 0, sizeof lx);
  lx.prog = prog;
  lx.diags = d;
  int rc = ag__tile_lex(&lx);
  if (rc == AG_ENOMEM) {
    ag__tile_lex_release(&lx);
    ag_tile_program_free(prog);
    return AG_ENOMEM;
  }
  parser p;
  memset(&p, 0, sizeof p);
  p.prog = prog;
  p.diags = d;
  p.t = lx.toks.v;
  p.n = lx.toks.n;
  p.nerrors = lx.nerrors;
  if (setjmp(p.oom)) {
    ag__tile_lex_release(&lx);
    ag_tile_program_free(prog);
    return AG_ENOMEM;
  }
  alist top = {0};
  /* statements() installs a recovery point per statement; this outer one
   * only gives p.stmt a valid value before the first */
  if (p.nerrors == 0 && setjmp(p.stmt) == 0)
    statements(&p, &top, 1);
  prog->top = afinish(&top);
  ag__tile_lex_release(&lx);
  if (p.nerrors) {
    if (p.nerrors > AG_TILE_MAX_ERRORS && ag_diags_add(d, AG_SEV_NOTE, prog->file, 0, 0, NULL, 0,
                                                       "too many errors; stopped parsing"))
      rc = AG_ENOMEM;
    ag_tile_program_free(prog);
    return rc == AG_ENOMEM ? AG_ENOMEM : AG_EPARSE;
  }
  *out = prog;
  return 0;
}

int ag_tile_parse_file(const char *path, ag_diags *d, ag_tile_program **out) {
  *out = NULL;
  char *data = NULL;
  size_t len = 0;
  int rc = ag_file_read(path, &data, &len);
  if (rc) {
    if (rc != AG_ENOMEM &&
        ag_diags_add(d, AG_SEV_ERROR, path, 0, 0, NULL, 0, "cannot read the file: %s",
                     ag_strerror(rc)))
      rc = AG_ENOMEM;
    return rc == AG_ENOMEM ? AG_ENOMEM : AG_EIO;
  }
  rc = ag_tile_parse(data, len, path, d, out);
  ag_free(data);
  return rc;
}

void ag_tile_program_free(ag_tile_program *p) {
  if (!p)
    return;
  ag_arena_release(&p->arena);
  ag_free(p);
}

const char *ag_tile_srcline(const ag_tile_program *p, int line, size_t *len) {
  if (line <= 0) {
    *len = 0;
    return NULL;
  }
  return ag_text_line(p->src, p->len, line, len);
}

int ag_tile_diag(const ag_tile_program *p, ag_diags *d, ag_severity sev, const ag_tile_node *n,
                 const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t ll = 0;
  int line = n ? n->line : 0, col = n ? n->col : 0;
  const char *src = ag_tile_srcline(p, line, &ll);
  return ag_diags_add(d, sev, p->file, line, col, src, ll, "%s", msg);
}
