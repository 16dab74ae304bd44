/*
 * test_sass_metrics.c — the SASS-metrics collector on the CPU
 * (docs/sass-metrics.md):
 *
 *   parse_disasm   nvdisasm -c text (the H200 run's, of attrib_truth.cu) into
 *                  opcodes, guards, operands and device-function labels
 *   recorded       the evidence recorded on the H200
 *                  (tests/data/evidence/attrib_truth.sass.json) decodes and
 *                  follows the ground-truth rule; its totals equal the
 *                  hardware counters ncu read on the same launch; a wrong
 *                  expectation (another k1/k2 split) fails the rule
 *   bad_evidence   malformed files get a diagnostic naming what is wrong
 *   no_cupti       no CUPTI library: AG_HOST_ENODEV, a message saying what
 *                  to install or set
 *   held           another subscriber holds CUPTI (a stand-in library):
 *                  AG_HOST_EBUSY and the message; and through the host
 *                  runtime under ARGUS_COLLECT=sass: ag_host_open fails and
 *                  host-error.txt says why (the Collect task's reason)
 *   unsupported    CUPTI without SASS-metrics support: AG_HOST_EUNSUPPORTED
 */
#include <stdlib.h>
#include <unistd.h>

#include "argus/host.h"
#include "argus/sass_ev.h"
#include "check.h"
#include "sass_metrics.h"
#include "truth_check.h"

static const char disasm[] =
    "\t.section\t.text.attrib_truth,\"ax\",@progbits\n"
    "        .type           attrib_truth,@function\n"
    "attrib_truth:\n"
    ".text.attrib_truth:\n"
    "\t//## File \"attrib_truth.cu\", line 44\n"
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*00c0*/              @!P0 BRA `(.L_x_0) ;\n"
    ".L_x_1:\n"
    "        /*0130*/                   CALL.REL.NOINC `($attrib_truth$_Z3mixff) ;\n"
    "        /*02e0*/                   EXIT ;\n"
    "        .type           $attrib_truth$_Z3mixff,@function\n"
    "$attrib_truth$_Z3mixff:\n"
    "        /*02f0*/                   FFMA R0, R7, R0, R4 ;\n"
    "        /*0370*/                   RET.REL.NODEC R2 `(attrib_truth) ;\n"
    "\t.section\t.text.other,\"ax\",@progbits\n"
    "other:\n"
    "        /*0000*/                   EXIT ;\n";

/* a kernel of more than 4,096 instructions: offsets of 5 hex digits past
 * 0xffff (the megakernel's 7,320; before, every PC past 0xfff0 lost its
 * opcode) */
static const char disasm_big[] =
    "\t.section\t.text.big,\"ax\",@progbits\n"
    "big:\n"
    "        /*fff0*/                   FFMA R0, R7, R0, R4 ;\n"
    "        /*10000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;\n"
    "        /*1c970*/              @P0 EXIT ;\n";

static int contains(const char *hay, const char *needle) {
  return hay && strstr(hay, needle) != NULL;
}

TEST(parse_disasm) {
  ag_sassm *s = ag_sassm_new_offline();
  CHECK(s != NULL);
  CHECK_EQ_INT(ag_sassm_parse_disasm(s, disasm), 7);
  ag_jb j = {0};
  ag_sassm_json(s, &j);
  CHECK(!j.oom);
  /* [pc, guard, opcode, operands]; the helper's label at 0x2f0; local labels dropped */
  CHECK(contains(j.p, "[192,\"@!P0\",\"BRA\",\"`(.L_x_0)\"]"));
  CHECK(contains(j.p, "[0,\"\",\"LDC\",\"R1, c[0x0][0x28]\"]"));
  CHECK(contains(j.p, "[304,\"\",\"CALL.REL.NOINC\",\"`($attrib_truth$_Z3mixff)\"]"));
  CHECK(contains(j.p, "[736,\"\",\"EXIT\",\"\"]"));
  CHECK(contains(j.p, "[\"$attrib_truth$_Z3mixff\",752]"));
  CHECK(contains(j.p, "[\"attrib_truth\",0]"));
  CHECK(!contains(j.p, ".L_x_1\","));
  CHECK(contains(j.p, "{\"name\":\"other\",\"labels\":[[\"other\",0]],\"code\":[\n[0,\"\",\"EXIT\",\"\"]]}"));
  ag_jb_release(&j);
  ag_sassm_close(s);
  s = ag_sassm_new_offline();
  CHECK(s != NULL);
  CHECK_EQ_INT(ag_sassm_parse_disasm(s, disasm_big), 3);
  j = (ag_jb){0};
  ag_sassm_json(s, &j);
  CHECK(contains(j.p, "[65520,\"\",\"FFMA\",\"R0, R7, R0, R4\"]"));
  CHECK(contains(j.p, "[65536,\"\",\"LDG.E.128\",\"R4, desc[UR4][R2.64]\"]"));
  CHECK(contains(j.p, "[117104,\"@P0\",\"EXIT\",\"\"]"));
  ag_jb_release(&j);
  ag_sassm_close(s);
}

static ag_sass_ev *load(const char *path, ag_str *msg) {
  ag_diags d;
  ag_diags_init(&d);
  ag_sass_ev *e = NULL;
  if (ag_sass_ev_load(path, &d, &e))
    ag_diags_format(&d, msg);
  ag_diags_release(&d);
  return e;
}

static char *data_path(const char *name) {
  const char *src = getenv("ARGUS_SOURCE_DIR");
  ag_str p = {0};
  ag_str_printf(&p, "%s/tests/data/evidence/%s", src ? src : ".", name);
  return ag_str_detach(&p);
}

TEST(recorded) {
  char *path = data_path("attrib_truth.sass.json");
  ag_str msg = {0};
  ag_sass_ev *e = load(path, &msg);
  if (!e)
    fprintf(stderr, "%s", msg.p ? msg.p : "");
  CHECK(e != NULL);
  if (e) {
    CHECK_EQ_STR(e->chip, "GH100");
    CHECK(e->sass_status == NULL);
    uint64_t warps = truth_warps(e);
    CHECK_EQ_U64(warps, TRUTH_BLOCKS * TRUTH_THREADS / 32);
    char why[2048];
    int bad = truth_check(e, warps, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why);
    if (bad)
      fprintf(stderr, "ground truth: %s\n", why);
    CHECK_EQ_INT(bad, 0);
    /* a wrong expectation must fail: the same k1 + k2 split otherwise, and another sum */
    CHECK(truth_check(e, warps, TRUTH_K2, TRUTH_K1, TRUTH_K3, why, sizeof why) == 0);
    CHECK(truth_check(e, warps, 4, 4, TRUTH_K3, why, sizeof why) > 0);
    CHECK(contains(why, "call sites"));
    CHECK(truth_check(e, warps, TRUTH_K1 + 1, TRUTH_K2, TRUTH_K3, why, sizeof why) > 0);
    CHECK(contains(why, "per warp, want 1, k1, k2 or k3"));
    CHECK(truth_check(e, warps * 2, TRUTH_K1, TRUTH_K2, TRUTH_K3, why, sizeof why) > 0);
    /* the helper's opcodes, read through nvdisasm on the H200 */
    const ag_sass_insn *call = NULL;
    for (size_t i = 0; i < e->nins && !call; i++)
      if (!strncmp(e->ins[i].op, "CALL", 4))
        call = &e->ins[i];
    CHECK(call && contains(call->args, TRUTH_HELPER));
    /* totals: the hardware counters ncu read on the same launch */
    char *np = data_path("attrib_truth.ncu.txt"), *txt = NULL;
    size_t len = 0;
    CHECK_EQ_INT(ag_file_read(np, &txt, &len), 0);
    unsigned long long ni = 0, nt = 0, npo = 0;
    CHECK_EQ_INT(sscanf(txt ? txt : "",
                        "smsp__inst_executed.sum %llu smsp__thread_inst_executed.sum %llu "
                        "smsp__thread_inst_executed_pred_on.sum %llu",
                        &ni, &nt, &npo),
                 3);
    CHECK_EQ_U64(ag_sass_ev_total(e, ag_sass_ev_metric(e, "smsp__sass_inst_executed")), ni);
    CHECK_EQ_U64(ag_sass_ev_total(e, ag_sass_ev_metric(e, "smsp__sass_thread_inst_executed")),
                 nt);
    CHECK_EQ_U64(
        ag_sass_ev_total(e, ag_sass_ev_metric(e, "smsp__sass_thread_inst_executed_pred_on")),
        npo);
    CHECK_EQ_INT(ag_sass_ev_metric(e, "no_such_metric"), -1);
    ag_free(txt);
    ag_free(np);
  }
  ag_sass_ev_free(e);
  ag_str_release(&msg);
  ag_free(path);
}

/* Writes text to a temp file and loads it: the diagnostic must contain want. */
static void bad_case(const char *text, const char *want) {
  char path[] = "/tmp/argus-sassev-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
  close(fd);
  ag_str msg = {0};
  ag_sass_ev *e = load(path, &msg);
  CHECK(e == NULL);
  if (!contains(msg.p, want))
    fprintf(stderr, "diagnostic '%s' lacks '%s'\n", msg.p ? msg.p : "", want);
  CHECK(contains(msg.p, want));
  CHECK(contains(msg.p, path));
  ag_sass_ev_free(e);
  ag_str_release(&msg);
  unlink(path);
}

#define HEAD "{\"format\":\"argus-sass-metrics\",\"version\":1,\"cubins\":[{\"crc\":7}],"
#define COLS "\"columns\":[\"cubin_crc\",\"function\",\"pc\",\"smsp__sass_inst_executed\"],"
#define SASS ",\"sass\":{\"tool\":\"nvdisasm\",\"status\":null,\"functions\":[]}}"

TEST(bad_evidence) {
  bad_case("not json", "cannot read SASS-metrics evidence");
  bad_case("[1,2]", "not a JSON object");
  bad_case("{\"format\":\"argus-timing\",\"version\":1}", "not SASS-metrics evidence");
  bad_case("{\"format\":\"argus-sass-metrics\",\"version\":2}", "version 2");
  bad_case("{\"format\":\"argus-sass-metrics\",\"version\":1," COLS "\"rows\":[]" SASS,
           "names no cubin");
  bad_case(HEAD "\"columns\":[\"cubin_crc\"],\"rows\":[]" SASS, "fewer than 3");
  bad_case(HEAD COLS "\"rows\":[[7,\"k\",0,1,2]]" SASS, "rows[0]: not an array");
  bad_case(HEAD COLS "\"rows\":[[7,\"k\",0,-1]]" SASS, "rows[0]: value of 'smsp__sass_inst_executed'");
  bad_case(HEAD COLS "\"rows\":[[7,3,0,1]]" SASS, "rows[0]: cubin_crc, function or pc");
  bad_case(HEAD COLS "\"rows\":[[7,\"k\",16,1],[7,\"k\",16,2]]" SASS,
           "function 'k', pc 0x10) appears twice");
  bad_case(HEAD COLS "\"rows\":[]}", "'sass.functions' is missing");
  bad_case(HEAD COLS "\"rows\":[],\"sass\":{\"functions\":[{\"name\":\"k\",\"labels\":[],"
                     "\"code\":[[0,\"\",\"EXIT\"]]}]}}",
           "code[0]: not [pc, pred, opcode, operands]");
  /* a well-formed one loads: the variant's rows and the rest apart */
  char path[] = "/tmp/argus-sassev-XXXXXX";
  int fd = mkstemp(path);
  const char *ok = HEAD COLS "\"rows\":[[7,\"k\",16,5],[9,\"k\",16,100],[7,\"k\",0,3]],"
                             "\"sass\":{\"functions\":[{\"name\":\"k\",\"labels\":[[\"k\",0]],"
                             "\"code\":[[0,\"\",\"MOV\",\"R1, R2\"],[16,\"@P0\",\"EXIT\",\"\"]]}]}}";
  CHECK(write(fd, ok, strlen(ok)) == (ssize_t)strlen(ok));
  close(fd);
  ag_str msg = {0};
  ag_sass_ev *e = load(path, &msg);
  CHECK(e != NULL);
  if (e) {
    CHECK_EQ_U64(ag_sass_ev_total(e, 0), 8);
    CHECK_EQ_INT((int)e->nrows, 3);
    CHECK_EQ_INT(e->rows[0].pc, 0); /* sorted */
    const ag_sass_insn *in = ag_sass_ev_insn(e, "k", 16);
    CHECK(in && !strcmp(in->op, "EXIT") && !strcmp(in->pred, "@P0"));
    CHECK(ag_sass_ev_insn(e, "k", 8) == NULL);
  }
  ag_sass_ev_free(e);
  ag_str_release(&msg);
  unlink(path);
}

TEST(no_cupti) {
  setenv("ARGUS_LIBCUPTI", "/nonexistent/libcupti.so", 1);
  char err[1024] = "";
  ag_sassm *s = NULL;
  CHECK_EQ_INT(ag_sassm_open(NULL, 0, NULL, &s, err, sizeof err), AG_HOST_ENODEV);
  CHECK(s == NULL);
  CHECK(contains(err, "no CUPTI: cannot load /nonexistent/libcupti.so"));
  CHECK(contains(err, "ARGUS_LIBCUPTI"));
  unsetenv("ARGUS_LIBCUPTI");
}

TEST(held) {
  setenv("ARGUS_LIBCUPTI", FAKE_CUPTI, 1);
  char err[1024] = "";
  ag_sassm *s = NULL;
  CHECK_EQ_INT(ag_sassm_open(NULL, 0, NULL, &s, err, sizeof err), AG_HOST_EBUSY);
  CHECK(s == NULL);
  CHECK(contains(err, "CUPTI already has a subscriber in this process"));
  /* through the host runtime: a clear failed task */
  char dir[] = "/tmp/argus-sassm-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  setenv("ARGUS_LIBCUDA", FAKE_CUDA, 1);
  setenv("ARGUS_COLLECT", "sass", 1);
  setenv("ARGUS_OUT", dir, 1);
  setenv("ARGUS_VARIANT", "/nonexistent.cubin", 1);
  ag_host *h = NULL;
  CHECK_EQ_INT(ag_host_open(&h), AG_HOST_EBUSY);
  CHECK(contains(ag_host_errmsg(h), "CUPTI already has a subscriber"));
  ag_host_close(h);
  char p[1200], *txt = NULL;
  size_t len = 0;
  snprintf(p, sizeof p, "%s/host-error.txt", dir);
  CHECK_EQ_INT(ag_file_read(p, &txt, &len), 0);
  CHECK(contains(txt, "CUPTI already has a subscriber in this process"));
  ag_free(txt);
  unlink(p);
  rmdir(dir);
  /* an unknown collection names sass among the known ones */
  setenv("ARGUS_COLLECT", "sassy", 1);
  CHECK_EQ_INT(ag_host_open(&h), AG_HOST_EUNSUPPORTED);
  CHECK(contains(ag_host_errmsg(h),
                 "(known: trace, time, map, sass, system, stalls, pm, counters)"));
  ag_host_close(h);
  unsetenv("ARGUS_COLLECT");
  unsetenv("ARGUS_OUT");
  unsetenv("ARGUS_VARIANT");
  unsetenv("ARGUS_LIBCUDA");
  unsetenv("ARGUS_LIBCUPTI");
}

TEST(unsupported) {
  setenv("ARGUS_LIBCUPTI", FAKE_CUPTI, 1);
  setenv("FAKE_CUPTI_SUBSCRIBE", "0", 1);
  char err[1024] = "";
  ag_sassm *s = NULL;
  CHECK_EQ_INT(ag_sassm_open(NULL, 0, NULL, &s, err, sizeof err), AG_HOST_EUNSUPPORTED);
  CHECK(s == NULL);
  CHECK(contains(err, "cuptiProfilerInitialize failed: CUPTI_ERROR_NOT_SUPPORTED"));
  unsetenv("FAKE_CUPTI_SUBSCRIBE");
  unsetenv("ARGUS_LIBCUPTI");
}

RUN_TESTS(T(parse_disasm), T(recorded), T(bad_evidence), T(no_cupti), T(held), T(unsupported))
