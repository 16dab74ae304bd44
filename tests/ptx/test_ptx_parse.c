/*
 * test_ptx_parse.c — the PTX parser on its own: operand structure, a table
 * of malformed inputs (each must give a diagnostic at the right line and
 * column, never a crash), markers, the editing API, an out-of-memory fault
 * loop, and deterministic random mutation of the corpus.
 */
#include "argus/ptx.h"
#include "check.h"
#include "corpus.h"
#include "diag_case.h"

static ag_ptx_module *parse_ok(const char *text) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  int rc = ag_ptx_parse(text, strlen(text), "t.ptx", &d, &m);
  if (rc) {
    ag_str s = AG_STR_INIT;
    ag_diags_format(&d, &s);
    fprintf(stderr, "%s", ag_str_cstr(&s));
    ag_str_release(&s);
  }
  CHECK_EQ_INT(rc, 0);
  ag_diags_release(&d);
  return m;
}

static ag_ptx_stmt *nth_instr(ag_ptx_module *m, int n) {
  for (ag_ptx_stmt *s = m->first; s; s = s->next)
    if (s->kind == AG_PTX_INSTR && n-- == 0)
      return s;
  return NULL;
}

#define HDR ".version 8.4\n.target sm_90a\n.address_size 64\n"

TEST(operands) {
  const char *t = HDR
      ".visible .entry k(\n\t.param .u64 k_p0,\n\t.param .align 128 .b8 k_p1[128]\n)\n"
      ".maxntid 128, 1, 1\n{\n"
      "\t.reg .pred %p<3>;\n\t.reg .b32 %r<9>;\n\t.reg .b64 %rd<4>;\n\t.reg .f32 %f<3>;\n"
      "\t.shared .align 8 .b8 bar[24];\n"
      "\t@!%p1 ld.global.v2.u32 {%r1, _}, [%rd1+-16];\n"
      "\tmov.f32 %f1, 0fBF800000;\n"
      "\tsetp.eq.s32 %p1|%p2, %r1, 0x10;\n"
      "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
      "[%r2], [%rd2, {%r3, %r4}], [bar+8];\n"
      "\tmov.u32 %r5, -3;\n"
      "\tret;\n}\n";
  ag_ptx_module *m = parse_ok(t);
  if (!m)
    return;
  CHECK_EQ_STR(m->version, "8.4");
  CHECK_EQ_STR(m->target, "sm_90a");
  CHECK_EQ_INT(m->address_size, 64);
  CHECK_EQ_INT(m->nfuncs, 1);
  ag_ptx_func *f = m->funcs[0];
  CHECK_EQ_STR(f->name, "k");
  CHECK(f->is_entry);
  CHECK_EQ_STR(f->linkage, ".visible");
  CHECK_EQ_INT(f->nparams, 2);
  CHECK_EQ_STR(f->params[1].name, "k_p1");
  CHECK_EQ_INT(f->params[1].align, 128);
  CHECK_EQ_STR(f->params[1].array, "[128]");
  ag_ptx_stmt *s = nth_instr(m, 0);
  CHECK_EQ_STR(s->guard, "%p1");
  CHECK(s->guard_neg);
  CHECK_EQ_STR(s->opcode, "ld.global.v2.u32");
  CHECK_EQ_INT(s->nops, 2);
  CHECK_EQ_INT(s->ops[0].kind, AG_PTX_OP_VEC);
  CHECK_EQ_INT(s->ops[0].nsub, 2);
  CHECK_EQ_INT(s->ops[0].sub[1].kind, AG_PTX_OP_SINK);
  CHECK_EQ_INT(s->ops[1].kind, AG_PTX_OP_ADDR);
  CHECK_EQ_STR(s->ops[1].base, "%rd1");
  CHECK_EQ_INT(s->ops[1].ival, -16);
  s = nth_instr(m, 1);
  CHECK_EQ_INT(s->ops[1].kind, AG_PTX_OP_FLOAT);
  CHECK(s->ops[1].fval == -1.0);
  s = nth_instr(m, 2);
  CHECK_EQ_INT(s->ops[0].kind, AG_PTX_OP_EXPR);
  CHECK_EQ_STR(s->ops[0].text, "%p1|%p2");
  CHECK_EQ_INT(s->ops[2].ival, 16);
  s = nth_instr(m, 3);
  CHECK(ag_ptx_op_is(s, "cp.async.bulk.tensor"));
  CHECK(!ag_ptx_op_is(s, "cp.async.bulk.tens"));
  CHECK(ag_ptx_op_has(s, ".mbarrier::complete_tx::bytes"));
  CHECK_EQ_INT(s->ops[1].nsub, 2);
  CHECK_EQ_INT(s->ops[1].sub[1].kind, AG_PTX_OP_VEC);
  CHECK_EQ_STR(s->ops[2].base, "bar");
  CHECK_EQ_INT(s->ops[2].ival, 8);
  s = nth_instr(m, 4);
  CHECK_EQ_INT(s->ops[1].ival, -3);
  /* declarations */
  int decls = 0;
  for (ag_ptx_stmt *q = m->first; q; q = q->next)
    if (q->kind == AG_PTX_DECL && !strcmp(q->name, ".shared")) {
      decls++;
      CHECK_EQ_INT(q->align, 8);
      CHECK_EQ_STR(q->type, ".b8");
      CHECK_EQ_STR(q->names[0].name, "bar");
      CHECK_EQ_STR(q->names[0].array, "[24]");
    } else if (q->kind == AG_PTX_DECL && q->type && !strcmp(q->type, ".b32")) {
      CHECK_EQ_STR(q->names[0].name, "%r");
      CHECK_EQ_INT(q->names[0].count, 9);
    }
  CHECK_EQ_INT(decls, 1);
  ag_ptx_module_free(m);
}

static const dc_case bad_inputs[] = {
    {HDR "/* never closed\n", 4, 1, "unterminated block comment"},
    {HDR "mov.u32 %r1, 0;\n", 4, 1, "statement outside a function"},
    {HDR "L1:\n", 4, 1, "statement outside a function"},
    {HDR "}\n", 4, 1, "statement outside a function"},
    {HDR ".entry f()\n{\n\tmov.u32 %r1, 0\n}\n", 7, 1, "expected ';' after instruction 'mov.u32'"},
    {HDR ".entry f()\n{\n\tmov.f32 %f1, 0f3F80;\n}\n", 6, 15, "malformed single-precision"},
    {HDR ".entry f()\n{\n\tmov.f64 %fd1, 0d3FF0;\n}\n", 6, 16, "malformed double-precision"},
    {HDR ".entry f()\n{\n\tld.global.u32 %r1, [%rd1;\n}\n", 6, 21, "unclosed '['"},
    {HDR ".entry f()\n{\n\tmov.b64 %rd1, {%r1, %r2;\n}\n", 6, 16, "unclosed '{'"},
    {HDR ".entry f()\n{\n\tret;\n", 4, 1, "no closing '}'"},
    {HDR ".bogus 1\n", 4, 1, "unknown directive '.bogus'"},
    {HDR ".entry (\n", 4, 8, "expected a function name"},
    {HDR ".entry f()\n{\n\t.pragma \"nounroll;\n}\n", 6, 10, "unterminated string literal"},
    {HDR ".entry f()\n{\n\t.reg .b32 %r<;\n}\n", 6, 14, "malformed register range"},
    {HDR ".entry f() @\n{\n}\n", 4, 12, "unexpected '@' in the header"},
    {HDR ".entry f()\n{\n\tret; #\n}\n", 6, 7, "unexpected '#'"},
    {HDR ".section .debug_info\n", 5, 1, "expected '{'"},
    {HDR ".section .debug_info {\n.b8 1\n", 4, 22, "unclosed '{' of .section"},
    {HDR ".entry f(.param .u32 a\n{\n}\n", 5, 1, "unexpected '{' in parameter list"},
    {HDR ".entry f()\n{\n\t@ bra L;\n}\n", 6, 3, "expected a predicate register"},
    {HDR ".entry f()\n{\n\tmov.u32 %r1, 09x;\n}\n", 6, 15, "malformed number"},
    {HDR ".entry f()\n{\n\tmov.u32 %r1, 0x;\n}\n", 6, 15, "malformed hexadecimal"},
    {HDR ".visible .shared .b8 x[4]\n", 4, 1, "expected ';'"},
    {HDR ".visible .version 8.0\n", 4, 10, "expected .entry, .func or a declaration"},
    {HDR ".entry f()\n{\n\tadd.s32 %r1, %r2, ;\n}\n", 6, 20, "unexpected ';' in operand"},
    {HDR ".entry f()\n.maxntid 128\n", 4, 1, "has neither a body nor ';'"},
    {HDR ".entry f()\n{\n\tfoo %r1 %r2;\n}\n", 6, 10, "expected ';'"},
    /* an unclosed '{' is named where it was opened */
    {HDR ".visible .entry k()\n{\n\t{\n\tret;\n}\n.visible .entry k2()\n{\n\tret;\n}\n", 9, 1,
     "'{' opened at 5:1 in function 'k' is not closed before '.visible' starts another function"},
    {HDR ".entry k()\n{\n\t{\n\tret;\n\t.entry k2()\n", 8, 2,
     "'{' opened at 6:2 in function 'k' is not closed before '.entry'"},
    {HDR ".entry f()\n{\n\t{\n\tret;\n}\n", 4, 1,
     "the '{' opened at 5:1 is not closed at the end of the text"},
    /* no module at all */
    {"", 1, 1, "no PTX module here"},
    {"// a comment\n\n/* and another */\n", 1, 1, "no PTX module here"},
};

TEST(malformed_table) {
  for (size_t i = 0; i < sizeof bad_inputs / sizeof bad_inputs[0]; i++) {
    const dc_case *b = &bad_inputs[i];
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m = NULL;
    int rc = ag_ptx_parse(b->text, strlen(b->text), "bad.ptx", &d, &m);
    if (rc != AG_EPARSE)
      fprintf(stderr, "case %zu parsed\n", i);
    CHECK_EQ_INT(rc, AG_EPARSE);
    CHECK(m == NULL);
    /* the formatted diagnostic has file:line:col and a caret */
    dc_expect_caret(&d, i, "bad.ptx", b->line, b->col, b->msg);
    ag_diags_release(&d);
  }
  /* NUL byte: at its own line and column */
  {
    const char t[] = ".version 8.4\n\0x";
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m;
    CHECK_EQ_INT(ag_ptx_parse(t, sizeof t - 1, "nul.ptx", &d, &m), AG_EPARSE);
    CHECK(d.items.n && strstr(d.items.v[0].msg, "NUL"));
    CHECK(d.items.n && d.items.v[0].line == 2 && d.items.v[0].col == 1);
    ag_diags_release(&d);
    ag_str u = AG_STR_INIT;
    ag_str_puts(&u, HDR ".entry f()\n{\n");
    for (int l = 6; l < 30; l++)
      ag_str_puts(&u, "\tret;\n");
    ag_str_puts(&u, "\tre");
    ag_str_putc(&u, 0);
    ag_str_puts(&u, "t;\n}\n");
    ag_diags_init(&d);
    CHECK_EQ_INT(ag_ptx_parse(u.p, u.len, "nul.ptx", &d, &m), AG_EPARSE);
    CHECK(d.items.n == 1);
    if (d.items.n) {
      CHECK_EQ_INT(d.items.v[0].line, 30);
      CHECK_EQ_INT(d.items.v[0].col, 4);
    }
    ag_diags_release(&d);
    ag_str_release(&u);
  }
  /* deep block nesting is an error, not a stack overflow */
  {
    ag_str t = AG_STR_INIT;
    ag_str_puts(&t, HDR ".entry f()\n");
    for (int i = 0; i < 5000; i++)
      ag_str_putc(&t, '{');
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m;
    CHECK_EQ_INT(ag_ptx_parse(t.p, t.len, "deep.ptx", &d, &m), AG_EPARSE);
    CHECK(d.items.n && strstr(d.items.v[0].msg, "nested too deeply"));
    ag_diags_release(&d);
    ag_str_release(&t);
  }
  /* deliberately right: a well-formed module gives no diagnostic */
  {
    const char *t = HDR ".entry f()\n{\n\tret;\n}\n";
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m;
    CHECK_EQ_INT(ag_ptx_parse(t, strlen(t), "ok.ptx", &d, &m), 0);
    CHECK_EQ_INT(d.items.n, 0);
    ag_ptx_module_free(m);
    ag_diags_release(&d);
  }
}

typedef struct mcase {
  const char *comment;
  int want; /* 1 marker, 0 plain comment, <0 error */
  int kind;
  const char *name, *iter, *msg;
} mcase;

TEST(markers) {
  static const mcase cases[] = {
      {"// @argus begin 12613261051159514351 step %r17", 1, AG_PTX_MARK_BEGIN, "step", "%r17", NULL},
      {"// @argus begin -5833483022550037265 step", 1, AG_PTX_MARK_BEGIN, "step", NULL, NULL},
      {"// @argus end 0xaf0b4e191da20cef step", 1, AG_PTX_MARK_END, "step", NULL, NULL},
      {"// @argus role - producer", 1, AG_PTX_MARK_ROLE, "producer", NULL, NULL},
      {"// begin inline asm", 0, 0, NULL, NULL, NULL},
      {"// @argusx begin - a", 0, 0, NULL, NULL, NULL},
      {"// @argus start - a", AG_EPARSE, 0, NULL, NULL, "expected 'begin', 'end' or 'role'"},
      {"// @argus begin", AG_EPARSE, 0, NULL, NULL, "missing the name hash"},
      {"// @argus begin -", AG_EPARSE, 0, NULL, NULL, "invalid region name"},
      {"// @argus begin 12613261051159514352 step", AG_EPARSE, 0, NULL, NULL,
       "does not match its name"},
      {"// @argus begin 12x step", AG_EPARSE, 0, NULL, NULL, "malformed marker hash"},
      {"// @argus end - step %r1", AG_EPARSE, 0, NULL, NULL, "unexpected '%r1'"},
      {"// @argus begin - step %r1 extra", AG_EPARSE, 0, NULL, NULL, "too many fields"},
      {"// @argus begin - 9lives", AG_EPARSE, 0, NULL, NULL, "invalid region name"},
      /* the iteration operand: an integer or a declared 16/32/64-bit register */
      {"// @argus begin - a 7", 1, AG_PTX_MARK_BEGIN, "a", "7", NULL},
      {"// @argus begin - a -0x1F", 1, AG_PTX_MARK_BEGIN, "a", "-0x1F", NULL},
      {"// @argus begin - a %rd3", 1, AG_PTX_MARK_BEGIN, "a", "%rd3", NULL},
      {"// @argus begin - a notareg", AG_EPARSE, 0, NULL, NULL,
       "iteration operand 'notareg' of region 'a' is not an integer or a 16-, 32- or 64-bit "
       "register declared in 'f'"},
      {"// @argus begin - a 12z", AG_EPARSE, 0, NULL, NULL, "iteration operand '12z'"},
      {"// @argus begin - a %r20", AG_EPARSE, 0, NULL, NULL, "iteration operand '%r20'"},
      {"// @argus begin - a %p1", AG_EPARSE, 0, NULL, NULL, "iteration operand '%p1'"},
      {"// @argus begin - a %q", AG_EPARSE, 0, NULL, NULL, "iteration operand '%q'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512];
    snprintf(text, sizeof text,
             HDR ".entry f()\n{\n\t.reg .b32 %%r<20>;\n\t.reg .b64 %%rd<4>;\n"
                 "\t.reg .pred %%p<2>;\n\t%s\n\tret;\n}\n",
             cases[i].comment);
    ag_ptx_module *m = parse_ok(text);
    if (!m)
      continue;
    ag_ptx_stmt *s = m->first;
    while (s && !(s->kind == AG_PTX_COMMENT && s->func))
      s = s->next;
    CHECK(s != NULL);
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_marker mk;
    int rc = ag_ptx_marker_parse(m, s, &d, &mk);
    if (rc != cases[i].want)
      fprintf(stderr, "marker case %zu: rc %d\n", i, rc);
    CHECK_EQ_INT(rc, cases[i].want);
    if (rc == 1) {
      CHECK_EQ_INT(mk.kind, cases[i].kind);
      CHECK_EQ_STR(mk.name, cases[i].name);
      if (cases[i].iter)
        CHECK_EQ_STR(mk.iter, cases[i].iter);
      else
        CHECK(mk.iter == NULL);
      CHECK_EQ_U64(mk.name_hash, ag_ptx_fnv1a(mk.name, strlen(mk.name)));
    } else if (rc < 0) {
      CHECK(d.items.n == 1);
      if (d.items.n) {
        CHECK_CONTAINS(d.items.v[0].msg, cases[i].msg);
        CHECK_EQ_INT(d.items.v[0].line, 9);
      }
    }
    ag_diags_release(&d);
    ag_ptx_module_free(m);
  }
}

TEST(fnv1a_vectors) {
  /* published FNV-1a 64 test vectors */
  CHECK_EQ_U64(ag_ptx_fnv1a("", 0), 0xcbf29ce484222325ull);
  CHECK_EQ_U64(ag_ptx_fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
  CHECK_EQ_U64(ag_ptx_fnv1a("foobar", 6), 0x85944171f73967e8ull);
  CHECK_EQ_U64(ag_ptx_region_id("gemm/mainloop"), ag_ptx_fnv1a("gemm/mainloop", 13));
  /* deliberately wrong: a different name gives a different ID */
  CHECK(ag_ptx_region_id("gemm/mainloop") != ag_ptx_region_id("gemm/mainloop2"));
}

TEST(edit_api) {
  const char *t = HDR ".visible .entry f()\n{\n\t.reg .b32 %r<3>;\n\tmov.u32 %r1, 1;\n"
                      "\tmov.u32 %r2, 2;\n\tret;\n}\n";
  ag_ptx_module *m = parse_ok(t);
  if (!m)
    return;
  ag_ptx_func *f = ag_ptx_find_func(m, "f");
  CHECK(f != NULL);
  CHECK(ag_ptx_find_func(m, "g") == NULL);
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_stmt *a, *b;
  ag_ptx_stmt *second = nth_instr(m, 1);
  CHECK_EQ_INT(ag_ptx_parse_snippet(m, f, "\t// probe\n\tmov.u32 %r2, %clock;", &d, &a, &b), 0);
  CHECK(a && b && a != b);
  CHECK_EQ_INT(a->kind, AG_PTX_COMMENT);
  CHECK_EQ_INT(b->kind, AG_PTX_INSTR);
  CHECK_EQ_STR(b->opcode, "mov.u32");
  ag_ptx_insert_before(m, second, a, b);
  CHECK(b->func == f);
  ag_str out = AG_STR_INIT;
  ag_ptx_print(m, &out);
  CHECK_CONTAINS(ag_str_cstr(&out),
                 "\tmov.u32 %r1, 1;\n\t// probe\n\tmov.u32 %r2, %clock;\n\tmov.u32 %r2, 2;");
  /* replace keeps the old statement's leading whitespace */
  ag_ptx_stmt *c, *e;
  CHECK_EQ_INT(ag_ptx_parse_snippet(m, f, "add.s32 %r2, %r1, 5;", &d, &c, &e), 0);
  ag_ptx_replace(m, second, c, e);
  ag_str_clear(&out);
  ag_ptx_print(m, &out);
  CHECK_CONTAINS(ag_str_cstr(&out), "%clock;\n\tadd.s32 %r2, %r1, 5;\n\tret;");
  /* removing the inserted statements and restoring the original gives the input */
  ag_ptx_remove(m, a);
  ag_ptx_remove(m, b);
  ag_ptx_replace(m, c, second, second);
  ag_str_clear(&out);
  ag_ptx_print(m, &out);
  CHECK_EQ_STR(ag_str_cstr(&out), t);
  ag_ptx_func_renumber(f);
  CHECK(f->nstmts > 4);
  /* malformed snippets are diagnosed */
  CHECK_EQ_INT(ag_ptx_parse_snippet(m, f, "mov.u32 %r1", &d, &a, &b), AG_EPARSE);
  CHECK_EQ_INT(ag_ptx_parse_snippet(m, f, "{ ret;", &d, &a, &b), AG_EPARSE);
  CHECK_EQ_INT(ag_ptx_parse_snippet(m, f, "}", &d, &a, &b), AG_EPARSE);
  CHECK(d.nerrors == 3);
  ag_str_release(&out);
  ag_diags_release(&d);
  ag_ptx_module_free(m);
}

static char *read_corpus_file(const char *rel, int build, size_t *len) {
  char *text = NULL;
  if (ag_file_read(corpus_path(rel, build), &text, len))
    return NULL;
  return text;
}

TEST(oom_fault_loop) {
  size_t len;
  char *text = read_corpus_file("tests/data/ptx/hand/triton_style.ptx", 0, &len);
  CHECK(text != NULL);
  if (!text)
    return;
  int succeeded = 0;
  for (long n = 1; n < 100000 && !succeeded; n++) {
    ag_diags d;
    ag_diags_init(&d);
    ag_ptx_module *m = NULL;
    ag_alloc_fail_at(n);
    int rc = ag_ptx_parse(text, len, "oom.ptx", &d, &m);
    if (rc == 0) {
      ag_ptx_regions *R;
      rc = ag_ptx_discover(m, &d, &R);
      if (rc == 0) {
        ag_str out = AG_STR_INIT;
        rc = ag_ptx_print(m, &out);
        ag_str_release(&out);
      }
    }
    ag_alloc_fail_at(0);
    if (rc != 0 && rc != AG_ENOMEM)
      fprintf(stderr, "allocation %ld: rc %s\n", n, ag_err_name(rc));
    CHECK(rc == 0 || rc == AG_ENOMEM);
    succeeded = rc == 0;
    ag_ptx_module_free(m);
    ag_diags_release(&d);
  }
  CHECK(succeeded);
  ag_free(text);
}

static uint32_t lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

TEST(random_mutation) {
  corpus_list files = {0};
  corpus_collect(&files);
  static const char alphabet[] = "{}[]();,.@!%_:/*\"\n\t 0123456789abcdefxrp+-|<>";
  uint32_t seed = 42;
  int parsed = 0, rejected = 0;
  for (size_t fi = 0; fi < files.n; fi++) {
    char *text;
    size_t len;
    if (ag_file_read(files.v[fi], &text, &len))
      continue;
    for (int round = 0; round < 300; round++) {
      ag_str mut = AG_STR_INIT;
      ag_str_append(&mut, text, len);
      int edits = 1 + (int)(lcg(&seed) % 4);
      for (int e = 0; e < edits && mut.len > 2; e++) {
        size_t pos = lcg(&seed) % mut.len;
        switch (lcg(&seed) % 4) {
        case 0: { /* delete a range */
          size_t n = 1 + lcg(&seed) % 16;
          if (pos + n > mut.len)
            n = mut.len - pos;
          memmove(mut.p + pos, mut.p + pos + n, mut.len - pos - n);
          mut.len -= n;
          mut.p[mut.len] = 0;
          break;
        }
        case 1: /* overwrite a byte */
          mut.p[pos] = alphabet[lcg(&seed) % (sizeof alphabet - 1)];
          break;
        case 2: /* truncate */
          mut.len = pos;
          mut.p[pos] = 0;
          break;
        default: { /* insert a byte */
          char c = alphabet[lcg(&seed) % (sizeof alphabet - 1)];
          ag_str_putc(&mut, 0);
          memmove(mut.p + pos + 1, mut.p + pos, mut.len - pos - 1);
          mut.p[pos] = c;
          break;
        }
        }
      }
      ag_diags d;
      ag_diags_init(&d);
      ag_ptx_module *m = NULL;
      int rc = ag_ptx_parse(mut.p, mut.len, "mut.ptx", &d, &m);
      CHECK(rc == 0 || rc == AG_EPARSE);
      if (rc == 0) {
        parsed++;
        ag_str out = AG_STR_INIT;
        ag_ptx_print(m, &out);
        CHECK(out.len == mut.len && memcmp(out.p ? out.p : "", mut.p, mut.len) == 0);
        ag_str_release(&out);
        ag_ptx_regions *R;
        rc = ag_ptx_discover(m, &d, &R);
        CHECK(rc == 0 || rc == AG_EPARSE);
        CHECK(rc == 0 || d.nerrors > 0);
      } else {
        rejected++;
        CHECK(d.nerrors > 0 && d.items.n > 0 && d.items.v[0].line > 0);
      }
      ag_ptx_module_free(m);
      ag_diags_release(&d);
      ag_str_release(&mut);
    }
    ag_free(text);
  }
  printf("mutations: %d parsed, %d rejected\n", parsed, rejected);
  CHECK(rejected > 0);
  corpus_free(&files);
}

RUN_TESTS(T(operands), T(malformed_table), T(markers), T(fnv1a_vectors), T(edit_api),
          T(oom_fault_loop), T(random_mutation))
