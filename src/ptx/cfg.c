/*
 * cfg.c — control-flow graphs of PTX functions: basic blocks over the
 * flattened statement list, edges for branches (bra, brx.idx through
 * .branchtargets), returns and exits (to one virtual exit block), calls
 * (recorded, falling through), dominators by the Cooper-Harvey-Kennedy
 * iteration over reverse post-order, and natural loops from back edges.
 *
 * Labels are scoped: a label declared inside a `{ }` block is visible in
 * that block and the blocks it contains, and the innermost declaration
 * wins (Triton's inline-asm wait loops reuse label names in sibling
 * blocks). Linear in the function's size apart from the dominator
 * iteration, which converges in a few passes on reducible PTX.
 */
#include "ptx_internal.h"

#include <stdlib.h>
#include <string.h>

int ag__ptx_is_terminator(const ag_ptx_stmt *s) {
  return ag_ptx_op_is(s, "ret") || ag_ptx_op_is(s, "exit") || ag_ptx_op_is(s, "trap");
}

int ag__ptx_is_branch(const ag_ptx_stmt *s) {
  return ag_ptx_op_is(s, "bra") || ag_ptx_op_is(s, "brx");
}

/* A label naming a .branchtargets/.calltargets/.callprototype directive. */
static int is_table_label(const ag_ptx_stmt *s) {
  const ag_ptx_stmt *n = s->next;
  return n && n->kind == AG_PTX_DIRECTIVE &&
         (!strcmp(n->name, ".branchtargets") || !strcmp(n->name, ".calltargets") ||
          !strcmp(n->name, ".callprototype"));
}

typedef struct scope {
  int parent;
} scope;

static int label_key(char *buf, size_t cap, int sc, const char *name) {
  return snprintf(buf, cap, "%d:%s", sc, name);
}

/* Finds the label `name` visible from scope sc. */
static ag_ptx_stmt *resolve(const ag_map *labels, const scope *scopes, int sc,
                            const char *name) {
  char buf[512];
  for (; sc >= 0; sc = scopes[sc].parent) {
    int n = label_key(buf, sizeof buf, sc, name);
    if (n <= 0 || (size_t)n >= sizeof buf)
      return NULL;
    ag_ptx_stmt *s = ag_map_get(labels, buf, (size_t)n);
    if (s)
      return s;
  }
  return NULL;
}

static int add_edge(ag_arena *a, ag_ptx_block *b, int to, int kind) {
  for (int i = 0; i < b->nsucc; i++)
    if (b->succ[i].to == to)
      return 0;
  if ((b->nsucc & (b->nsucc - 1)) == 0) {
    size_t cap = b->nsucc ? (size_t)b->nsucc * 2 : 2;
    ag_ptx_edge *nv = ag__ptx_grow(a, b->succ, (size_t)b->nsucc, cap, sizeof *nv);
    if (!nv)
      return AG_ENOMEM;
    b->succ = nv;
  }
  b->succ[b->nsucc].to = to;
  b->succ[b->nsucc].kind = kind;
  b->nsucc++;
  return 0;
}

static int intersect(const ag_ptx_block *bl, const int *rpo_num, int a, int b) {
  while (a != b) {
    while (rpo_num[a] > rpo_num[b])
      a = bl[a].idom;
    while (rpo_num[b] > rpo_num[a])
      b = bl[b].idom;
  }
  return a;
}

int ag_ptx_dominates(const ag_ptx_cfg *g, int a, int b) {
  if (a < 0 || b < 0 || a >= g->nblocks || b >= g->nblocks)
    return 0;
  if (!g->blocks[b].reachable)
    return 0;
  for (int x = b; x >= 0; x = g->blocks[x].idom)
    if (x == a)
      return 1;
  return 0;
}

/* 1 when u -> h is a back edge (h dominates u). A dominator comes first in
 * reverse post-order, so only a retreating edge (rpo_num[h] <= rpo_num[u])
 * can be one: the dominator-chain walk, O(depth), runs for those alone and
 * loop detection stays linear in the CFG for straight-line code. */
static int is_back_edge(ag_ptx_block *bl, int nb, const int *rpo_num, int u, int h) {
  if (!bl[u].reachable)
    return 0;
  if (u == h)
    return 1;
  if (rpo_num[h] > rpo_num[u])
    return 0;
  return ag_ptx_dominates(&(ag_ptx_cfg){.blocks = bl, .nblocks = nb}, h, u);
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int ag_ptx_cfg_build(ag_ptx_module *m, ag_ptx_func *f, ag_diags *diags, ag_ptx_cfg **out) {
  *out = NULL;
  if (!f->body_open)
    return AG_EINVAL;
  ag_arena *A = &m->arena;
  int rc = 0;
  ag_map labels;
  ag_map_init(&labels);
  AG_VEC(scope) scopes = {0};
  AG_VEC(int) stmt_scope = {0};
  AG_VEC(ag_ptx_block) blocks = {0};
  AG_VEC(ag_ptx_call) calls = {0};
  int *rpo = NULL, *rpo_num = NULL, *stack = NULL, *mark = NULL, *memb = NULL;
  ag_ptx_cfg *g = ag_arena_alloc(A, sizeof *g);
  if (!g)
    return AG_ENOMEM;
  g->func = f;
  ag_ptx_func_renumber(f);

  /* pass 1: scopes, labels, blocks */
  int cur_scope = -1;
  int cur_block = -1;
  int cur_has_instr = 0, cut = 1;
  char key[512];
  for (ag_ptx_stmt *s = f->body_open; s; s = s->next) {
    if (s->kind == AG_PTX_BLOCK_BEGIN) {
      scope sc = {cur_scope};
      if (ag_vec_push(&scopes, sc))
        goto nomem;
      cur_scope = (int)scopes.n - 1;
    }
    if (ag_vec_push(&stmt_scope, cur_scope))
      goto nomem;
    /* a '}' right after a branch or return stays in that block; a label
     * starts a block unless the block so far holds only labels (comments
     * count: a marker before a label is not executed by a jump to it). A
     * label of a directive (.branchtargets, .callprototype) is not code. */
    int code_label = s->kind == AG_PTX_LABEL && !is_table_label(s);
    int start_new = (cut && s->kind != AG_PTX_BLOCK_END) || (code_label && cur_has_instr);
    if (start_new) {
      ag_ptx_block b;
      memset(&b, 0, sizeof b);
      b.id = (int)blocks.n;
      b.first = b.last = s;
      b.idom = -1;
      b.loop = -1;
      if (ag_vec_push(&blocks, b))
        goto nomem;
      cur_block = b.id;
      cur_has_instr = 0;
      cut = 0;
    }
    blocks.v[cur_block].last = s;
    s->block = cur_block;
    if (!code_label && s->kind != AG_PTX_DIRECTIVE)
      cur_has_instr = 1;
    if (s->kind == AG_PTX_LABEL) {
      int n = label_key(key, sizeof key, cur_scope, s->name);
      if (n > 0 && (size_t)n < sizeof key && ag_map_put(&labels, key, (size_t)n, s))
        goto nomem;
    } else if (s->kind == AG_PTX_INSTR) {
      cur_has_instr = 1;
      if (ag__ptx_is_branch(s) || ag__ptx_is_terminator(s))
        cut = 1;
      if (ag_ptx_op_is(s, "call")) {
        ag_ptx_call c = {s, NULL};
        /* call[.uni] [(rets),] callee, [(args)] [, proto] */
        for (int i = 0; i < s->nops; i++)
          if (s->ops[i].kind != AG_PTX_OP_LIST) {
            if (s->ops[i].kind == AG_PTX_OP_SYM)
              c.callee = s->ops[i].base;
            break;
          }
        if (ag_vec_push(&calls, c))
          goto nomem;
      }
    } else if (s->kind == AG_PTX_BLOCK_END) {
      if (cur_scope >= 0)
        cur_scope = scopes.v[cur_scope].parent;
    }
    if (s == f->body_close)
      break;
  }
  int nreal = (int)blocks.n;
  {
    ag_ptx_block xb;
    memset(&xb, 0, sizeof xb);
    xb.id = nreal;
    xb.idom = -1;
    xb.loop = -1;
    if (ag_vec_push(&blocks, xb))
      goto nomem;
  }
  int exit_id = nreal;
  ag_ptx_block *bl = blocks.v;

  /* pass 2: edges */
  for (int b = 0; b < nreal; b++) {
    ag_ptx_stmt *last_instr = NULL;
    for (ag_ptx_stmt *s = bl[b].first;; s = s->next) {
      if (s->kind == AG_PTX_INSTR)
        last_instr = s;
      if (s == bl[b].last)
        break;
    }
    int falls = 1;
    if (last_instr && (ag__ptx_is_branch(last_instr) || ag__ptx_is_terminator(last_instr))) {
      int sc = stmt_scope.v[last_instr->index];
      if (ag__ptx_is_terminator(last_instr)) {
        bl[b].terminator = 1;
        if (add_edge(A, &bl[b], exit_id, AG_PTX_EDGE_EXIT))
          goto nomem;
      } else if (ag_ptx_op_is(last_instr, "bra")) {
        const ag_ptx_operand *t = last_instr->nops ? &last_instr->ops[0] : NULL;
        ag_ptx_stmt *ls = t && t->kind == AG_PTX_OP_SYM ? resolve(&labels, scopes.v, sc, t->base)
                                                         : NULL;
        if (!ls) {
          ag_diags_add(diags, AG_SEV_ERROR, m->path, last_instr->line, last_instr->col,
                       last_instr->text, last_instr->text_len,
                       "branch to unknown label '%s' in function '%s'",
                       t ? t->text : "", f->name);
          rc = AG_EPARSE;
          goto out;
        }
        if (add_edge(A, &bl[b], ls->block, AG_PTX_EDGE_BRANCH))
          goto nomem;
      } else {
        /* brx.idx index, tbl: tbl labels a .branchtargets directive */
        const ag_ptx_operand *t = last_instr->nops >= 2 ? &last_instr->ops[1] : NULL;
        ag_ptx_stmt *ls = t && t->kind == AG_PTX_OP_SYM ? resolve(&labels, scopes.v, sc, t->base)
                                                         : NULL;
        ag_ptx_stmt *dir = ls ? ls->next : NULL;
        while (dir && dir->kind == AG_PTX_COMMENT)
          dir = dir->next;
        if (!dir || dir->kind != AG_PTX_DIRECTIVE || strcmp(dir->name, ".branchtargets")) {
          ag_diags_add(diags, AG_SEV_ERROR, m->path, last_instr->line, last_instr->col,
                       last_instr->text, last_instr->text_len,
                       "brx.idx target list '%s' is not a .branchtargets label in function '%s'",
                       t ? t->text : "", f->name);
          rc = AG_EPARSE;
          goto out;
        }
        const char *p = dir->args;
        while (*p) {
          while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\n' || *p == '\r')
            p++;
          const char *q = p;
          while (*q && *q != ',' && *q != ' ' && *q != '\t' && *q != '\n' && *q != '\r')
            q++;
          if (q > p) {
            char name[256];
            size_t n = (size_t)(q - p) < sizeof name - 1 ? (size_t)(q - p) : sizeof name - 1;
            memcpy(name, p, n);
            name[n] = 0;
            ag_ptx_stmt *tl = resolve(&labels, scopes.v, sc, name);
            if (!tl) {
              ag_diags_add(diags, AG_SEV_ERROR, m->path, dir->line, dir->col, dir->text,
                           dir->text_len, "branch target '%s' is not a label in function '%s'",
                           name, f->name);
              rc = AG_EPARSE;
              goto out;
            }
            if (add_edge(A, &bl[b], tl->block, AG_PTX_EDGE_BRANCH))
              goto nomem;
          }
          p = q;
        }
      }
      falls = last_instr->guard != NULL;
    }
    if (falls) {
      if (add_edge(A, &bl[b], b + 1 < nreal ? b + 1 : exit_id,
                   b + 1 < nreal ? AG_PTX_EDGE_FALL : AG_PTX_EDGE_EXIT))
        goto nomem;
    }
  }
  /* predecessors */
  int nb = (int)blocks.n;
  {
    int *cnt = ag_calloc((size_t)nb, sizeof *cnt);
    if (!cnt)
      goto nomem;
    for (int b = 0; b < nb; b++)
      for (int i = 0; i < bl[b].nsucc; i++)
        cnt[bl[b].succ[i].to]++;
    for (int b = 0; b < nb; b++) {
      if (cnt[b] && !(bl[b].pred = ag_arena_alloc(A, sizeof(int) * (size_t)cnt[b]))) {
        ag_free(cnt);
        goto nomem;
      }
    }
    ag_free(cnt);
    for (int b = 0; b < nb; b++)
      for (int i = 0; i < bl[b].nsucc; i++) {
        ag_ptx_block *t = &bl[bl[b].succ[i].to];
        t->pred[t->npred++] = b;
      }
  }

  /* reverse post-order from the entry (iterative DFS) */
  rpo = ag_malloc(sizeof(int) * (size_t)nb);
  rpo_num = ag_malloc(sizeof(int) * (size_t)nb);
  stack = ag_malloc(sizeof(int) * (size_t)nb * 2);
  mark = ag_calloc((size_t)nb, sizeof(int));
  if (!rpo || !rpo_num || !stack || !mark)
    goto nomem;
  int nrpo = 0, sp = 0;
  {
    int post = nb;
    stack[sp++] = 0;
    stack[sp++] = 0;
    mark[0] = 1;
    while (sp) {
      int b = stack[sp - 2], i = stack[sp - 1];
      if (i < bl[b].nsucc) {
        stack[sp - 1]++;
        int t = bl[b].succ[i].to;
        if (!mark[t]) {
          mark[t] = 1;
          stack[sp++] = t;
          stack[sp++] = 0;
        }
      } else {
        sp -= 2;
        rpo[--post] = b;
        nrpo++;
      }
    }
    memmove(rpo, rpo + post, sizeof(int) * (size_t)nrpo);
    for (int b = 0; b < nb; b++)
      rpo_num[b] = nb + 1;
    for (int i = 0; i < nrpo; i++) {
      rpo_num[rpo[i]] = i;
      bl[rpo[i]].reachable = 1;
    }
  }
  /* dominators */
  bl[0].idom = 0;
  for (int changed = 1; changed;) {
    changed = 0;
    for (int i = 1; i < nrpo; i++) {
      int b = rpo[i], nd = -1;
      for (int k = 0; k < bl[b].npred; k++) {
        int p = bl[b].pred[k];
        if (!bl[p].reachable || (bl[p].idom < 0 && p != 0))
          continue;
        nd = nd < 0 ? p : intersect(bl, rpo_num, p, nd);
      }
      if (nd != bl[b].idom) {
        bl[b].idom = nd;
        changed = 1;
      }
    }
  }
  bl[0].idom = -1;

  /* natural loops: one per header, members by backward walk from latches */
  {
    AG_VEC(ag_ptx_loop) loops = {0};
    memset(mark, 0, sizeof(int) * (size_t)nb);
    memb = ag_malloc(sizeof(int) * (size_t)nb);
    if (!memb)
      goto nomem_loops;
    for (int i = 0; i < nrpo; i++) {
      int h = rpo[i];
      int nl = 0;
      for (int k = 0; k < bl[h].npred; k++)
        nl += is_back_edge(bl, nb, rpo_num, bl[h].pred[k], h);
      if (!nl)
        continue;
      ag_ptx_loop L;
      memset(&L, 0, sizeof L);
      L.header = h;
      L.parent = -1;
      L.latches = ag_arena_alloc(A, sizeof(int) * (size_t)nl);
      if (!L.latches)
        goto nomem_loops;
      int stamp = (int)loops.n + 1;
      int members = 1;
      mark[h] = stamp;
      memb[0] = h;
      sp = 0;
      for (int k = 0; k < bl[h].npred; k++) {
        int u = bl[h].pred[k];
        if (!is_back_edge(bl, nb, rpo_num, u, h))
          continue;
        L.latches[L.nlatches++] = u;
        if (mark[u] != stamp) {
          mark[u] = stamp;
          memb[members++] = u;
          stack[sp++] = u;
        }
      }
      while (sp) {
        int x = stack[--sp];
        for (int k = 0; k < bl[x].npred; k++) {
          int p = bl[x].pred[k];
          if (bl[p].reachable && mark[p] != stamp) {
            mark[p] = stamp;
            memb[members++] = p;
            stack[sp++] = p;
          }
        }
      }
      L.blocks = ag_arena_alloc(A, sizeof(int) * (size_t)members);
      if (!L.blocks)
        goto nomem_loops;
      /* in time linear in the loop's size, not the function's (sorted below) */
      memcpy(L.blocks, memb, sizeof(int) * (size_t)members);
      L.nblocks = members;
      L.id = (int)loops.n;
      if (ag_vec_push(&loops, L))
        goto nomem_loops;
      /* marks of later loops must not collide with this stamp */
    }
    /* innermost loop per block and nesting: larger loops first */
    int nloops = (int)loops.n;
    int *order = ag_malloc(sizeof(int) * (size_t)(nloops ? nloops : 1));
    if (!order)
      goto nomem_loops;
    for (int i = 0; i < nloops; i++)
      order[i] = i;
    for (int i = 1; i < nloops; i++) { /* insertion sort by size, descending */
      int x = order[i], j = i - 1;
      while (j >= 0 && loops.v[order[j]].nblocks < loops.v[x].nblocks) {
        order[j + 1] = order[j];
        j--;
      }
      order[j + 1] = x;
    }
    for (int i = 0; i < nloops; i++) {
      ag_ptx_loop *L = &loops.v[order[i]];
      L->parent = bl[L->header].loop;
      L->depth = L->parent >= 0 ? loops.v[L->parent].depth + 1 : 1;
      for (int k = 0; k < L->nblocks; k++)
        bl[L->blocks[k]].loop = L->id;
    }
    ag_free(order);
    if (nloops) {
      g->loops = ag_arena_alloc(A, sizeof *g->loops * (size_t)nloops);
      if (!g->loops)
        goto nomem_loops;
      memcpy(g->loops, loops.v, sizeof *g->loops * (size_t)nloops);
    }
    g->nloops = nloops;
    ag_vec_free(&loops);
    goto loops_done;
  nomem_loops:
    ag_vec_free(&loops);
    goto nomem;
  }
loops_done:
  for (int l = 0; l < g->nloops; l++)
    qsort(g->loops[l].blocks, (size_t)g->loops[l].nblocks, sizeof(int), cmp_int);
  g->nblocks = nb;
  g->exit = exit_id;
  g->blocks = ag_arena_alloc(A, sizeof *g->blocks * (size_t)nb);
  if (!g->blocks)
    goto nomem;
  memcpy(g->blocks, bl, sizeof *g->blocks * (size_t)nb);
  if (calls.n) {
    g->calls = ag_arena_alloc(A, sizeof *g->calls * calls.n);
    if (!g->calls)
      goto nomem;
    memcpy(g->calls, calls.v, sizeof *g->calls * calls.n);
  }
  g->ncalls = (int)calls.n;
  *out = g;
  goto out;
nomem:
  rc = AG_ENOMEM;
out:
  ag_free(rpo);
  ag_free(rpo_num);
  ag_free(stack);
  ag_free(mark);
  ag_free(memb);
  ag_map_release(&labels);
  ag_vec_free(&scopes);
  ag_vec_free(&stmt_scope);
  ag_vec_free(&blocks);
  ag_vec_free(&calls);
  return rc;
}

int ag_ptx_cfg_format(const ag_ptx_cfg *g, ag_str *out) {
  ag_str_printf(out, "function %s: %d blocks, %d loops\n", g->func->name, g->nblocks - 1,
                g->nloops);
  for (int b = 0; b < g->nblocks; b++) {
    const ag_ptx_block *B = &g->blocks[b];
    if (b == g->exit) {
      ag_str_printf(out, "  B%d exit\n", b);
      continue;
    }
    ag_str_printf(out, "  B%d lines %d-%d", b, B->first->line, B->last->line);
    if (!B->reachable)
      ag_str_puts(out, " unreachable");
    if (B->idom >= 0)
      ag_str_printf(out, " idom B%d", B->idom);
    if (B->loop >= 0)
      ag_str_printf(out, " loop L%d", B->loop);
    ag_str_puts(out, " ->");
    for (int i = 0; i < B->nsucc; i++)
      ag_str_printf(out, " B%d%s", B->succ[i].to,
                    B->succ[i].kind == AG_PTX_EDGE_BRANCH ? "(br)"
                    : B->succ[i].kind == AG_PTX_EDGE_EXIT ? "(exit)" : "");
    ag_str_putc(out, '\n');
  }
  for (int l = 0; l < g->nloops; l++) {
    const ag_ptx_loop *L = &g->loops[l];
    ag_str_printf(out, "  L%d header B%d depth %d parent %s%d blocks", l, L->header, L->depth,
                  L->parent >= 0 ? "L" : "", L->parent);
    for (int k = 0; k < L->nblocks; k++)
      ag_str_printf(out, " B%d", L->blocks[k]);
    ag_str_putc(out, '\n');
  }
  return out->oom ? AG_ENOMEM : 0;
}

static json_t *int_or_null(int v) { return v >= 0 ? json_integer(v) : json_null(); }

json_t *ag_ptx_cfg_to_json(const ag_ptx_cfg *g) {
  static const char *const kinds[] = {"fall", "branch", "exit"};
  json_t *blocks = json_array(), *loops = json_array();
  json_t *j = json_pack("{s:s,s:i,s:o,s:o}", "function", g->func->name, "exit", g->exit,
                        "blocks", blocks, "loops", loops);
  if (!j)
    return NULL;
  for (int b = 0; b < g->nblocks; b++) {
    const ag_ptx_block *B = &g->blocks[b];
    json_t *o = json_pack("{s:i}", "id", b);
    if (!o || json_array_append_new(blocks, o)) {
      json_decref(j);
      return NULL;
    }
    if (b == g->exit)
      continue;
    json_t *succ = json_array();
    for (int i = 0; i < B->nsucc; i++)
      json_array_append_new(succ, json_pack("{s:i,s:s}", "to", B->succ[i].to, "kind",
                                            kinds[B->succ[i].kind]));
    json_object_set_new(o, "lines", json_pack("[i,i]", B->first->line, B->last->line));
    json_object_set_new(o, "reachable", json_boolean(B->reachable));
    json_object_set_new(o, "idom", int_or_null(B->idom));
    json_object_set_new(o, "loop", int_or_null(B->loop));
    json_object_set_new(o, "succ", succ);
  }
  for (int l = 0; l < g->nloops; l++) {
    const ag_ptx_loop *L = &g->loops[l];
    json_t *mb = json_array();
    for (int k = 0; k < L->nblocks; k++)
      json_array_append_new(mb, json_integer(L->blocks[k]));
    json_array_append_new(loops, json_pack("{s:i,s:i,s:i,s:o,s:o}", "id", l, "header",
                                           L->header, "depth", L->depth, "parent",
                                           int_or_null(L->parent), "blocks", mb));
  }
  return j;
}
