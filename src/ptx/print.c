/*
 * print.c — printing a PTX module back to text and editing its statement
 * list. The printer concatenates each statement's leading whitespace and
 * text, so an unedited module prints byte-identically; edits splice chains
 * of statements parsed from PTX text (ag_ptx_parse_snippet). Linear in the
 * module's size.
 */
#include "ptx_internal.h"

#include <string.h>

int ag_ptx_print(const ag_ptx_module *m, ag_str *out) {
  size_t total = m->trail_len;
  for (const ag_ptx_stmt *s = m->first; s; s = s->next)
    total += s->lead_len + s->text_len;
  if (ag_str_reserve(out, total + 1))
    return AG_ENOMEM;
  for (const ag_ptx_stmt *s = m->first; s; s = s->next) {
    ag_str_append(out, s->lead, s->lead_len);
    ag_str_append(out, s->text, s->text_len);
  }
  if (m->trail_len)
    ag_str_append(out, m->trail, m->trail_len);
  return out->oom ? AG_ENOMEM : 0;
}

static void link_chain(ag_ptx_module *m, ag_ptx_stmt *prev, ag_ptx_stmt *next,
                       ag_ptx_stmt *first, ag_ptx_stmt *last) {
  first->prev = prev;
  last->next = next;
  if (prev)
    prev->next = first;
  else
    m->first = first;
  if (next)
    next->prev = last;
  else
    m->last = last;
}

static void adopt(ag_ptx_stmt *at, ag_ptx_stmt *first, ag_ptx_stmt *last) {
  for (ag_ptx_stmt *s = first; s; s = s->next) {
    s->func = at->func;
    s->depth += at->depth - 1 + (at->kind == AG_PTX_BLOCK_BEGIN);
    s->block = -1;
    if (s == last)
      break;
  }
}

void ag_ptx_insert_before(ag_ptx_module *m, ag_ptx_stmt *at, ag_ptx_stmt *first,
                          ag_ptx_stmt *last) {
  if (!first)
    return;
  adopt(at, first, last);
  if (at->kind == AG_PTX_BLOCK_BEGIN)
    for (ag_ptx_stmt *s = first; s; s = s == last ? NULL : s->next)
      s->depth--;
  link_chain(m, at->prev, at, first, last);
}

void ag_ptx_insert_after(ag_ptx_module *m, ag_ptx_stmt *at, ag_ptx_stmt *first,
                         ag_ptx_stmt *last) {
  if (!first)
    return;
  adopt(at, first, last);
  link_chain(m, at, at->next, first, last);
}

void ag_ptx_replace(ag_ptx_module *m, ag_ptx_stmt *old, ag_ptx_stmt *first,
                    ag_ptx_stmt *last) {
  if (!first) {
    ag_ptx_remove(m, old);
    return;
  }
  adopt(old, first, last);
  if (old->kind == AG_PTX_BLOCK_BEGIN)
    for (ag_ptx_stmt *s = first; s; s = s == last ? NULL : s->next)
      s->depth--;
  first->lead = old->lead;
  first->lead_len = old->lead_len;
  link_chain(m, old->prev, old->next, first, last);
  old->prev = old->next = NULL;
}

void ag_ptx_remove(ag_ptx_module *m, ag_ptx_stmt *s) {
  if (s->prev)
    s->prev->next = s->next;
  else
    m->first = s->next;
  if (s->next)
    s->next->prev = s->prev;
  else
    m->last = s->prev;
  s->prev = s->next = NULL;
}

void ag_ptx_func_renumber(ag_ptx_func *f) {
  int i = 0;
  if (f->body_open)
    for (ag_ptx_stmt *s = f->body_open; s; s = s->next) {
      s->index = i++;
      if (s == f->body_close)
        break;
    }
  f->nstmts = i;
}

ag_ptx_func *ag_ptx_find_func(const ag_ptx_module *m, const char *name) {
  for (int i = 0; i < m->nfuncs; i++)
    if (!strcmp(m->funcs[i]->name, name))
      return m->funcs[i];
  return NULL;
}

int ag_ptx_op_is(const ag_ptx_stmt *s, const char *prefix) {
  if (s->kind != AG_PTX_INSTR || !s->opcode)
    return 0;
  size_t n = strlen(prefix);
  return strncmp(s->opcode, prefix, n) == 0 && (s->opcode[n] == 0 || s->opcode[n] == '.');
}

int ag_ptx_op_has(const ag_ptx_stmt *s, const char *modifier) {
  if (s->kind != AG_PTX_INSTR || !s->opcode)
    return 0;
  size_t n = strlen(modifier);
  for (const char *p = s->opcode; (p = strstr(p, modifier)) != NULL; p++)
    if (p[n] == 0 || p[n] == '.')
      return 1;
  return 0;
}

void *ag__ptx_grow(ag_arena *a, void *v, size_t n, size_t cap, size_t sz) {
  void *nv = ag_arena_alloc(a, cap * sz);
  if (nv && n)
    memcpy(nv, v, n * sz);
  return nv;
}
