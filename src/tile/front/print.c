/*
 * print.c — prints a tile AST back as canonical source: parentheses only
 * where precedence needs them, one statement per line, four spaces per
 * block level. The parser reads the output back into the same tree, which the
 * tests use to check the parser (and the fuzzer to check both).
 */
#include "argus/tile.h"

#include <math.h>
#include <string.h>

const char *ag_tile_op_text(ag_tile_op op) {
  switch (op) {
  case AG_OP_ADD: return "+";
  case AG_OP_SUB: return "-";
  case AG_OP_MUL: return "*";
  case AG_OP_DIV: return "/";
  case AG_OP_FLOORDIV: return "//";
  case AG_OP_MOD: return "%";
  case AG_OP_AND: return "&";
  case AG_OP_OR: return "|";
  case AG_OP_XOR: return "^";
  case AG_OP_SHL: return "<<";
  case AG_OP_SHR: return ">>";
  case AG_OP_EQ: return "==";
  case AG_OP_NE: return "!=";
  case AG_OP_LT: return "<";
  case AG_OP_LE: return "<=";
  case AG_OP_GT: return ">";
  case AG_OP_GE: return ">=";
  case AG_OP_NEG: return "-";
  case AG_OP_POS: return "+";
  case AG_OP_INV: return "~";
  case AG_OP_NONE: break;
  }
  return "?";
}

static void pr(const ag_tile_node *n, ag_str *o);

/* Binding strength, loosest first, as the parser reads it. */
enum { P_TERNARY = 1, P_OR, P_AND, P_NOT, P_CMP, P_BOR, P_BXOR, P_BAND, P_SHIFT, P_SUM, P_TERM,
       P_UNARY, P_ATOM };

static int prec(const ag_tile_node *n) {
  switch (n->kind) {
  case AG_TN_TERNARY: return P_TERNARY;
  case AG_TN_LOR: return P_OR;
  case AG_TN_LAND: return P_AND;
  case AG_TN_LNOT: return P_NOT;
  case AG_TN_CMP: return P_CMP;
  case AG_TN_UNOP: return P_UNARY;
  case AG_TN_BINOP:
    switch (n->op) {
    case AG_OP_OR: return P_BOR;
    case AG_OP_XOR: return P_BXOR;
    case AG_OP_AND: return P_BAND;
    case AG_OP_SHL:
    case AG_OP_SHR: return P_SHIFT;
    case AG_OP_ADD:
    case AG_OP_SUB: return P_SUM;
    default: return P_TERM;
    }
  default: return P_ATOM;
  }
}

/* Prints n, in parentheses when it binds looser than `need`. */
static void pr_at(const ag_tile_node *n, int need, ag_str *o) {
  if (n && prec(n) < need) {
    ag_str_putc(o, '(');
    pr(n, o);
    ag_str_putc(o, ')');
  } else {
    pr(n, o);
  }
}

static void pr_list(const ag_tile_list *l, ag_str *o) {
  for (int i = 0; i < l->n; i++) {
    if (i)
      ag_str_puts(o, ", ");
    pr(l->v[i], o);
  }
}

static void pr_float(double v, ag_str *o) {
  char buf[40];
  snprintf(buf, sizeof buf, "%.17g", v);
  ag_str_puts(o, buf);
  if (!strpbrk(buf, ".eEn"))
    ag_str_puts(o, ".0");
}

/* Only the parentheses precedence and associativity need: the text reads
 * back as the same tree and is never nested deeper than the source was. */
static void pr(const ag_tile_node *n, ag_str *o) {
  if (!n) {
    ag_str_puts(o, "<null>");
    return;
  }
  int p = prec(n);
  switch (n->kind) {
  case AG_TN_INT: ag_str_printf(o, "%lld", (long long)n->ival); break;
  case AG_TN_FLOAT: pr_float(n->fval, o); break;
  case AG_TN_STR: {
    int has_dq = 0;
    for (const char *c = n->name; *c; c++) {
      if (*c == '\\' && c[1]) {
        c++;
        continue;
      }
      if (*c == '"')
        has_dq = 1;
    }
    char q = has_dq ? '\'' : '"';
    ag_str_printf(o, "%c%s%c", q, n->name, q);
    break;
  }
  case AG_TN_BOOL: ag_str_puts(o, n->ival ? "True" : "False"); break;
  case AG_TN_NAME: ag_str_puts(o, n->name); break;
  case AG_TN_BINOP: /* left-associative */
    pr_at(n->a, p, o);
    ag_str_printf(o, " %s ", ag_tile_op_text(n->op));
    pr_at(n->b, p + 1, o);
    break;
  case AG_TN_CMP: /* a chain would mean something else: both sides tighter */
    pr_at(n->a, p + 1, o);
    ag_str_printf(o, " %s ", ag_tile_op_text(n->op));
    pr_at(n->b, p + 1, o);
    break;
  case AG_TN_UNOP:
    ag_str_puts(o, ag_tile_op_text(n->op));
    pr_at(n->a, P_UNARY, o);
    break;
  case AG_TN_LAND:
  case AG_TN_LOR:
    pr_at(n->a, p, o);
    ag_str_puts(o, n->kind == AG_TN_LAND ? " and " : " or ");
    pr_at(n->b, p + 1, o);
    break;
  case AG_TN_LNOT:
    ag_str_puts(o, "not ");
    pr_at(n->a, P_NOT, o);
    break;
  case AG_TN_TERNARY:
    pr_at(n->a, P_OR, o);
    ag_str_puts(o, " if ");
    pr_at(n->b, P_OR, o);
    ag_str_puts(o, " else ");
    pr_at(n->c, P_TERNARY, o);
    break;
  case AG_TN_CALL:
    pr_at(n->a, P_ATOM, o);
    ag_str_putc(o, '(');
    pr_list(&n->list, o);
    ag_str_putc(o, ')');
    break;
  case AG_TN_KWARG:
    ag_str_printf(o, "%s=", n->name);
    pr(n->a, o);
    break;
  case AG_TN_INDEX:
    pr_at(n->a, P_ATOM, o);
    ag_str_putc(o, '[');
    pr_list(&n->list, o);
    ag_str_putc(o, ']');
    break;
  case AG_TN_SLICE:
    if (n->a)
      pr(n->a, o);
    ag_str_putc(o, ':');
    if (n->b)
      pr(n->b, o);
    break;
  case AG_TN_ATTR:
    pr_at(n->a, P_ATOM, o);
    ag_str_printf(o, ".%s", n->name);
    break;
  case AG_TN_TUPLE:
    ag_str_putc(o, '(');
    pr_list(&n->list, o);
    if (n->list.n == 1)
      ag_str_putc(o, ',');
    ag_str_putc(o, ')');
    break;
  case AG_TN_ARROW:
    pr(n->a, o);
    ag_str_puts(o, " -> ");
    pr(n->b, o);
    break;
  default:
    ag_tile_print(n, 0, o);
    break;
  }
}

static void indent_to(int level, ag_str *o) {
  for (int i = 0; i < level; i++)
    ag_str_puts(o, "    ");
}

static void pr_block(const ag_tile_list *l, int indent, ag_str *o) {
  for (int i = 0; i < l->n; i++)
    ag_tile_print(l->v[i], indent, o);
}

int ag_tile_print(const ag_tile_node *n, int indent, ag_str *o) {
  switch (n->kind) {
  case AG_TN_ASSIGN:
    indent_to(indent, o);
    pr_list(&n->list, o);
    if (n->op != AG_OP_NONE)
      ag_str_printf(o, " %s= ", ag_tile_op_text(n->op));
    else
      ag_str_puts(o, " = ");
    pr_list(&n->list2, o);
    ag_str_putc(o, '\n');
    break;
  case AG_TN_EXPR:
    indent_to(indent, o);
    pr(n->a, o);
    ag_str_putc(o, '\n');
    break;
  case AG_TN_PASS:
    indent_to(indent, o);
    ag_str_puts(o, "pass\n");
    break;
  case AG_TN_ASSERT:
  case AG_TN_ASSUME:
    indent_to(indent, o);
    ag_str_puts(o, n->kind == AG_TN_ASSERT ? "assert " : "assume ");
    pr(n->a, o);
    if (n->b) {
      ag_str_puts(o, ", ");
      pr(n->b, o);
    }
    ag_str_putc(o, '\n');
    break;
  case AG_TN_REGION:
    indent_to(indent, o);
    ag_str_printf(o, "region(\"%s\"):\n", n->name);
    pr_block(&n->list, indent + 1, o);
    break;
  case AG_TN_FOR:
    indent_to(indent, o);
    ag_str_printf(o, "for %s in ", n->name);
    pr(n->a, o);
    ag_str_puts(o, ":\n");
    pr_block(&n->list, indent + 1, o);
    break;
  case AG_TN_IF: {
    const ag_tile_node *cur = n;
    indent_to(indent, o);
    ag_str_puts(o, "if ");
    for (;;) {
      pr(cur->a, o);
      ag_str_puts(o, ":\n");
      pr_block(&cur->list, indent + 1, o);
      if (cur->list2.n == 1 && cur->list2.v[0]->kind == AG_TN_IF) {
        cur = cur->list2.v[0];
        indent_to(indent, o);
        ag_str_puts(o, "elif ");
        continue;
      }
      if (cur->list2.n) {
        indent_to(indent, o);
        ag_str_puts(o, "else:\n");
        pr_block(&cur->list2, indent + 1, o);
      }
      break;
    }
    break;
  }
  case AG_TN_PARAM:
    ag_str_printf(o, "%s: ", n->name);
    pr(n->a, o);
    if (n->b) {
      ag_str_puts(o, " = ");
      pr(n->b, o);
    }
    break;
  case AG_TN_KERNEL:
    for (int i = 0; n->a && i < n->a->list.n; i++) {
      indent_to(indent, o);
      ag_str_putc(o, '@');
      pr(n->a->list.v[i], o);
      ag_str_putc(o, '\n');
    }
    indent_to(indent, o);
    ag_str_printf(o, "def %s(", n->name);
    for (int i = 0; i < n->list.n; i++) {
      if (i)
        ag_str_puts(o, ", ");
      ag_tile_print(n->list.v[i], 0, o);
    }
    ag_str_puts(o, "):\n");
    pr_block(&n->list2, indent + 1, o);
    break;
  default:
    pr(n, o);
    break;
  }
  return o->oom ? AG_ENOMEM : 0;
}

int ag_tile_print_program(const ag_tile_program *p, ag_str *out) {
  for (int i = 0; i < p->top.n; i++)
    ag_tile_print(p->top.v[i], 0, out);
  return out->oom ? AG_ENOMEM : 0;
}
