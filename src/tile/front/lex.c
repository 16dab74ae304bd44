/*
 * lex.c — the tile DSL's tokenizer: bytes to tokens, with Python's layout
 * rule turning indentation into INDENT/DEDENT tokens.
 *
 * Invariants: every token carries its 1-based line and column; INDENT and
 * DEDENT are balanced; the stream ends with NEWLINE (when the file had any
 * statement), the closing DEDENTs and EOF. Newlines inside brackets are
 * ignored (implicit line joining). Only spaces indent: a tab in indentation,
 * a dedent to a column that was never opened, a NUL byte or a non-ASCII byte
 * outside comments and strings is an error with a diagnostic, and the lexer
 * goes on so the parser can report more. Linear in the input; programs are
 * a few hundred lines.
 */
#include "front.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INDENT_LEVELS 100

static const struct {
  const char *word;
  ag__tk kind;
} keywords[] = {
    {"def", TK_DEF},       {"for", TK_FOR},       {"in", TK_IN},
    {"if", TK_IF},         {"elif", TK_ELIF},     {"else", TK_ELSE},
    {"assert", TK_ASSERT}, {"assume", TK_ASSUME}, {"pass", TK_PASS},
    {"and", TK_AND},       {"or", TK_OR},         {"not", TK_NOT},
    {"True", TK_TRUE},     {"False", TK_FALSE},
};

const char *ag__tk_name(ag__tk k) {
  switch (k) {
  case TK_EOF: return "end of file";
  case TK_NEWLINE: return "end of line";
  case TK_INDENT: return "indent";
  case TK_DEDENT: return "dedent";
  case TK_NAME: return "name";
  case TK_INT: return "integer";
  case TK_FLOAT: return "number";
  case TK_STR: return "string";
  case TK_LPAREN: return "'('";
  case TK_RPAREN: return "')'";
  case TK_LBRACK: return "'['";
  case TK_RBRACK: return "']'";
  case TK_COMMA: return "','";
  case TK_COLON: return "':'";
  case TK_DOT: return "'.'";
  case TK_ASSIGN: return "'='";
  case TK_ARROW: return "'->'";
  case TK_AT: return "'@'";
  case TK_PLUS: return "'+'";
  case TK_MINUS: return "'-'";
  case TK_STAR: return "'*'";
  case TK_SLASH: return "'/'";
  case TK_DSLASH: return "'//'";
  case TK_PERCENT: return "'%'";
  case TK_AMP: return "'&'";
  case TK_PIPE: return "'|'";
  case TK_CARET: return "'^'";
  case TK_TILDE: return "'~'";
  case TK_SHL: return "'<<'";
  case TK_SHR: return "'>>'";
  case TK_EQ: return "'=='";
  case TK_NE: return "'!='";
  case TK_LT: return "'<'";
  case TK_LE: return "'<='";
  case TK_GT: return "'>'";
  case TK_GE: return "'>='";
  case TK_PLUSEQ: return "'+='";
  case TK_MINUSEQ: return "'-='";
  case TK_STAREQ: return "'*='";
  case TK_DEF: return "'def'";
  case TK_FOR: return "'for'";
  case TK_IN: return "'in'";
  case TK_IF: return "'if'";
  case TK_ELIF: return "'elif'";
  case TK_ELSE: return "'else'";
  case TK_ASSERT: return "'assert'";
  case TK_ASSUME: return "'assume'";
  case TK_PASS: return "'pass'";
  case TK_AND: return "'and'";
  case TK_OR: return "'or'";
  case TK_NOT: return "'not'";
  case TK_TRUE: return "'True'";
  case TK_FALSE: return "'False'";
  }
  return "token";
}

typedef struct lexstate {
  ag__lexer *lx;
  const char *src, *end, *p;
  const char *line_start;
  int line;
  int depth; /* bracket nesting */
  struct {
    int line, col;
    char c;
  } open[MAX_INDENT_LEVELS]; /* where the innermost brackets opened */
  int indents[MAX_INDENT_LEVELS];
  int nind;
  int oom;
} lexstate;

static int col_of(const lexstate *s, const char *at) {
  return (int)(at - s->line_start) + 1;
}

static void lex_error(lexstate *s, const char *at, const char *fmt, ...) AG_PRINTF(3, 4);
static void lex_error(lexstate *s, const char *at, const char *fmt, ...) {
  ag__lexer *lx = s->lx;
  lx->nerrors++;
  if (lx->nerrors > AG_TILE_MAX_ERRORS)
    return;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  size_t rest = (size_t)(s->end - s->line_start);
  if (ag_diags_add(lx->diags, AG_SEV_ERROR, lx->prog->file, s->line, col_of(s, at),
                   s->line_start, rest, "%s", msg))
    s->oom = 1;
}

static void push(lexstate *s, ag__tk kind, const char *start, size_t len) {
  ag__token t;
  memset(&t, 0, sizeof t);
  t.kind = kind;
  t.line = s->line;
  t.col = col_of(s, start);
  t.start = start;
  t.len = len;
  if (ag_vec_push(&s->lx->toks, t))
    s->oom = 1;
}

static int is_name_start(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_name_char(int c) { return is_name_start(c) || is_digit(c); }

static void newline(lexstate *s) {
  s->line++;
  s->line_start = s->p;
}

/* At the start of a logical line: measures indentation, skips blank and
 * comment-only lines, and emits INDENT/DEDENT. Returns 0 at end of input. */
static int start_line(lexstate *s) {
  for (;;) {
    const char *q = s->p;
    int width = 0, bad_tab = 0;
    while (q < s->end && (*q == ' ' || *q == '\t' || *q == '\f')) {
      if (*q == '\t')
        bad_tab = 1;
      width++;
      q++;
    }
    if (q >= s->end) {
      s->p = q;
      return 0;
    }
    if (*q == '#') {
      while (q < s->end && *q != '\n')
        q++;
    }
    if (q < s->end && (*q == '\n' || *q == '\r')) {
      if (*q == '\r' && q + 1 < s->end && q[1] == '\n')
        q++;
      s->p = q + 1;
      newline(s);
      continue;
    }
    if (q >= s->end) {
      s->p = q;
      return 0;
    }
    /* a real line */
    s->p = q;
    if (bad_tab) {
      /* the block structure of this line is unknowable: report it once and
       * keep the current level */
      lex_error(s, s->line_start,
                "tab in indentation; indent with spaces only (4 per level is usual)");
      return 1;
    }
    int cur = s->indents[s->nind - 1];
    if (width > cur) {
      if (s->nind >= MAX_INDENT_LEVELS) {
        lex_error(s, q, "blocks nested more than %d levels deep", MAX_INDENT_LEVELS - 1);
      } else {
        s->indents[s->nind++] = width;
        push(s, TK_INDENT, q, 0);
      }
    } else if (width < cur) {
      while (s->nind > 1 && width < s->indents[s->nind - 1]) {
        s->nind--;
        push(s, TK_DEDENT, q, 0);
      }
      if (width != s->indents[s->nind - 1])
        lex_error(s, q,
                  "unindent to column %d does not match the start column of any enclosing "
                  "block",
                  width + 1);
    }
    return 1;
  }
}

static void lex_number(lexstate *s) {
  const char *b = s->p, *q = s->p;
  int is_float = 0;
  if (q + 1 < s->end && q[0] == '0' && (q[1] == 'x' || q[1] == 'X' || q[1] == 'b' || q[1] == 'B')) {
    int base = (q[1] == 'x' || q[1] == 'X') ? 16 : 2;
    q += 2;
    uint64_t v = 0;
    int ndig = 0, overflow = 0;
    for (; q < s->end; q++) {
      int c = *q, d;
      if (is_digit(c)) d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else if (is_name_char(c)) d = 99;
      else break;
      if (d >= base) {
        lex_error(s, q, "digit '%c' is not valid in a base-%d literal", c, base);
        d = 0;
      }
      if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
        overflow = 1;
      v = v * (uint64_t)base + (uint64_t)d;
      ndig++;
    }
    if (!ndig)
      lex_error(s, b, "number literal '%.*s' has no digits", (int)(q - b), b);
    if (overflow || v > (uint64_t)INT64_MAX)
      lex_error(s, b, "integer literal '%.*s' does not fit in 63 bits", (int)(q - b), b);
    push(s, TK_INT, b, (size_t)(q - b));
    if (!s->oom)
      s->lx->toks.v[s->lx->toks.n - 1].ival = (int64_t)(v & INT64_MAX);
    s->p = q;
    return;
  }
  while (q < s->end && is_digit(*q))
    q++;
  if (q < s->end && *q == '.' && q + 1 < s->end && is_digit(q[1])) {
    is_float = 1;
    q++;
    while (q < s->end && is_digit(*q))
      q++;
  } else if (q < s->end && *q == '.' && !(q + 1 < s->end && is_name_start(q[1]))) {
    is_float = 1; /* "1." */
    q++;
  }
  if (q < s->end && (*q == 'e' || *q == 'E')) {
    const char *e = q + 1;
    if (e < s->end && (*e == '+' || *e == '-'))
      e++;
    if (e < s->end && is_digit(*e)) {
      is_float = 1;
      q = e;
      while (q < s->end && is_digit(*q))
        q++;
    }
  }
  if (q < s->end && is_name_start(*q)) {
    const char *e = q;
    while (e < s->end && is_name_char(*e))
      e++;
    lex_error(s, b, "malformed number '%.*s'", (int)(e - b), b);
    q = e;
  }
  char buf[64];
  size_t n = (size_t)(q - b);
  if (n >= sizeof buf) {
    lex_error(s, b, "number literal is too long (%zu characters)", n);
    n = sizeof buf - 1;
  }
  memcpy(buf, b, n);
  buf[n] = 0;
  if (is_float) {
    double v = strtod(buf, NULL);
    if (!(v <= 1.7976931348623157e308))
      lex_error(s, b, "number literal '%s' is out of range", buf);
    push(s, TK_FLOAT, b, (size_t)(q - b));
    if (!s->oom)
      s->lx->toks.v[s->lx->toks.n - 1].fval = v;
  } else {
    errno = 0;
    unsigned long long v = strtoull(buf, NULL, 10);
    if (errno == ERANGE || v > (unsigned long long)INT64_MAX) {
      lex_error(s, b, "integer literal '%s' does not fit in 63 bits", buf);
      v = 0;
    }
    push(s, TK_INT, b, (size_t)(q - b));
    if (!s->oom)
      s->lx->toks.v[s->lx->toks.n - 1].ival = (int64_t)v;
  }
  s->p = q;
}

static void lex_string(lexstate *s) {
  const char *b = s->p;
  char quote = *s->p++;
  while (s->p < s->end && *s->p != quote && *s->p != '\n') {
    if (*s->p == '\\' && s->p + 1 < s->end && s->p[1] != '\n')
      s->p++;
    s->p++;
  }
  if (s->p >= s->end || *s->p != quote) {
    lex_error(s, b, "string is not closed on this line (missing %c)", quote);
    push(s, TK_STR, b + 1, (size_t)(s->p - b - 1));
    return;
  }
  push(s, TK_STR, b + 1, (size_t)(s->p - b - 1));
  s->p++;
}

int ag__tile_lex(ag__lexer *lx) {
  lexstate s;
  memset(&s, 0, sizeof s);
  s.lx = lx;
  s.src = lx->prog->src;
  s.end = s.src + lx->prog->len;
  s.p = s.line_start = s.src;
  s.line = 1;
  s.nind = 1;
  s.indents[0] = 0;
  int at_line_start = 1, line_has_tokens = 0;
  while (!s.oom) {
    if (at_line_start && s.depth == 0) {
      if (!start_line(&s))
        break;
      at_line_start = 0;
    }
    if (s.p >= s.end)
      break;
    const char *b = s.p;
    int c = (unsigned char)*s.p;
    if (c == ' ' || c == '\t' || c == '\f') {
      s.p++;
      continue;
    }
    if (c == '#') {
      while (s.p < s.end && *s.p != '\n')
        s.p++;
      continue;
    }
    if (c == '\r' && s.p + 1 < s.end && s.p[1] == '\n') {
      s.p++;
      c = '\n';
    }
    if (c == '\n' || c == '\r') {
      if (s.depth == 0 && line_has_tokens) {
        push(&s, TK_NEWLINE, b, 0);
        line_has_tokens = 0;
      }
      s.p++;
      newline(&s);
      at_line_start = s.depth == 0;
      continue;
    }
    if (c == '\\' && s.p + 1 < s.end && (s.p[1] == '\n' || s.p[1] == '\r')) {
      /* explicit line joining */
      s.p += (s.p[1] == '\r' && s.p + 2 < s.end && s.p[2] == '\n') ? 3 : 2;
      newline(&s);
      continue;
    }
    line_has_tokens = 1;
    if (is_name_start(c)) {
      while (s.p < s.end && is_name_char(*s.p))
        s.p++;
      size_t n = (size_t)(s.p - b);
      ag__tk k = TK_NAME;
      for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++)
        if (strlen(keywords[i].word) == n && memcmp(keywords[i].word, b, n) == 0)
          k = keywords[i].kind;
      push(&s, k, b, n);
      continue;
    }
    if (is_digit(c) || (c == '.' && s.p + 1 < s.end && is_digit(s.p[1]))) {
      lex_number(&s);
      continue;
    }
    if (c == '"' || c == '\'') {
      lex_string(&s);
      continue;
    }
    ag__tk k = TK_EOF;
    size_t n = 1;
    char c1 = s.p + 1 < s.end ? s.p[1] : 0;
    switch (c) {
    case '(':
    case '[':
      k = c == '(' ? TK_LPAREN : TK_LBRACK;
      if (s.depth < MAX_INDENT_LEVELS) {
        s.open[s.depth].line = s.line;
        s.open[s.depth].col = col_of(&s, b);
        s.open[s.depth].c = (char)c;
      }
      s.depth++;
      break;
    case ')':
    case ']':
      k = c == ')' ? TK_RPAREN : TK_RBRACK;
      if (s.depth > 0)
        s.depth--;
      break;
    case ',': k = TK_COMMA; break;
    case ':': k = TK_COLON; break;
    case '.': k = TK_DOT; break;
    case '@': k = TK_AT; break;
    case '~': k = TK_TILDE; break;
    case '^': k = TK_CARET; break;
    case '&': k = TK_AMP; break;
    case '|': k = TK_PIPE; break;
    case '%': k = TK_PERCENT; break;
    case '+': if (c1 == '=') { k = TK_PLUSEQ; n = 2; } else k = TK_PLUS; break;
    case '*': if (c1 == '=') { k = TK_STAREQ; n = 2; } else k = TK_STAR; break;
    case '-':
      if (c1 == '>') { k = TK_ARROW; n = 2; }
      else if (c1 == '=') { k = TK_MINUSEQ; n = 2; }
      else k = TK_MINUS;
      break;
    case '/': if (c1 == '/') { k = TK_DSLASH; n = 2; } else k = TK_SLASH; break;
    case '=': if (c1 == '=') { k = TK_EQ; n = 2; } else k = TK_ASSIGN; break;
    case '!':
      if (c1 == '=') { k = TK_NE; n = 2; }
      break;
    case '<':
      if (c1 == '<') { k = TK_SHL; n = 2; }
      else if (c1 == '=') { k = TK_LE; n = 2; }
      else k = TK_LT;
      break;
    case '>':
      if (c1 == '>') { k = TK_SHR; n = 2; }
      else if (c1 == '=') { k = TK_GE; n = 2; }
      else k = TK_GT;
      break;
    default: break;
    }
    if (k == TK_EOF) {
      if (c == 0)
        lex_error(&s, b, "NUL byte in the source");
      else if (c >= 0x80)
        lex_error(&s, b, "non-ASCII byte 0x%02x outside a comment or string", c);
      else if (c == '!')
        lex_error(&s, b, "unexpected '!' (use 'not' for negation, '!=' for inequality)");
      else if (c < 0x20 || c == 0x7f)
        lex_error(&s, b, "unexpected control character 0x%02x", c);
      else
        lex_error(&s, b, "unexpected character '%c'", c);
      s.p++;
      continue;
    }
    push(&s, k, b, n);
    s.p += n;
  }
  if (s.oom)
    return AG_ENOMEM;
  if (s.depth > 0) {
    int k = s.depth <= MAX_INDENT_LEVELS ? s.depth - 1 : MAX_INDENT_LEVELS - 1;
    lx->nerrors++;
    size_t ll = 0;
    const char *src = ag_tile_srcline(lx->prog, s.open[k].line, &ll);
    if (lx->nerrors <= AG_TILE_MAX_ERRORS &&
        ag_diags_add(lx->diags, AG_SEV_ERROR, lx->prog->file, s.open[k].line, s.open[k].col,
                     src, ll, "'%c' is never closed", s.open[k].c))
      return AG_ENOMEM;
  }
  if (line_has_tokens)
    push(&s, TK_NEWLINE, s.p, 0);
  while (s.nind > 1) {
    s.nind--;
    push(&s, TK_DEDENT, s.p, 0);
  }
  push(&s, TK_EOF, s.p, 0);
  if (s.oom)
    return AG_ENOMEM;
  return lx->nerrors ? AG_EPARSE : 0;
}

void ag__tile_lex_release(ag__lexer *lx) { ag_vec_free(&lx->toks); }
