/*
 * front.h — internals shared by the tile DSL's lexer and parser.
 */
#ifndef ARGUS_TILE_FRONT_H
#define ARGUS_TILE_FRONT_H

#include "argus/tile.h"

typedef enum ag__tk {
  TK_EOF = 0,
  TK_NEWLINE, TK_INDENT, TK_DEDENT,
  TK_NAME, TK_INT, TK_FLOAT, TK_STR,
  /* punctuation */
  TK_LPAREN, TK_RPAREN, TK_LBRACK, TK_RBRACK, TK_COMMA, TK_COLON, TK_DOT,
  TK_ASSIGN, TK_ARROW, TK_AT,
  /* operators */
  TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_DSLASH, TK_PERCENT,
  TK_AMP, TK_PIPE, TK_CARET, TK_TILDE, TK_SHL, TK_SHR,
  TK_EQ, TK_NE, TK_LT, TK_LE, TK_GT, TK_GE,
  TK_PLUSEQ, TK_MINUSEQ, TK_STAREQ,
  /* keywords */
  TK_DEF, TK_FOR, TK_IN, TK_IF, TK_ELIF, TK_ELSE, TK_ASSERT, TK_ASSUME,
  TK_PASS, TK_AND, TK_OR, TK_NOT, TK_TRUE, TK_FALSE
} ag__tk;

typedef struct ag__token {
  ag__tk kind;
  int line, col;
  const char *start; /* into the source */
  size_t len;
  int64_t ival;
  double fval;
} ag__token;

typedef struct ag__lexer {
  const ag_tile_program *prog;
  ag_diags *diags;
  AG_VEC(ag__token) toks;
  int nerrors;
} ag__lexer;

/* Tokenizes prog->src into lx->toks (ending with TK_EOF). Returns 0,
 * AG_EPARSE (diagnostics added; tokens still usable up to the error) or
 * AG_ENOMEM. */
int ag__tile_lex(ag__lexer *lx);
void ag__tile_lex_release(ag__lexer *lx);
const char *ag__tk_name(ag__tk k);

#endif
