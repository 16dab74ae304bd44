/*
 * test_sass_opclass.c — the SASS opcode classes of inst_mix and barriers
 * (src/sass/opclass.c): opcodes as cuobjdump / nvdisasm / CUPTI print them
 * (with modifiers, guards, lower-case noise), each class reached, unknown
 * opcodes "misc", and the barrier classes. Pure CPU.
 */
#include "argus/sass.h"
#include "check.h"

TEST(opcodes_classify) {
  static const struct {
    const char *op;
    ag_sass_class c;
  } cases[] = {
      {"HGMMA.64x128x16.F32.BF16", AG_SASS_TENSOR},
      {"HMMA.16816.F32", AG_SASS_TENSOR},
      {"@P0 LDG.E.128.CONSTANT", AG_SASS_MEM_GLOBAL},
      {"STG.E", AG_SASS_MEM_GLOBAL},
      {"RED.E.ADD.64.STRONG.GPU", AG_SASS_MEM_GLOBAL},
      {"LD.E", AG_SASS_MEM_GLOBAL},
      {"LDS.128", AG_SASS_MEM_SHARED},
      {"LDSM.16.M88.4", AG_SASS_MEM_SHARED},
      {"STS", AG_SASS_MEM_SHARED},
      {"LDL.64", AG_SASS_MEM_LOCAL},
      {"LDC.64", AG_SASS_MEM_CONST},
      {"ULDC.64", AG_SASS_MEM_CONST},
      {"UTMALDG.2D", AG_SASS_TMA},
      {"UBLKCP.S.G", AG_SASS_TMA},
      {"LDGSTS.E.BYPASS.128", AG_SASS_LDGSTS},
      {"LDGDEPBAR", AG_SASS_LDGSTS},
      {"BAR.SYNC.DEFER_BLOCKING", AG_SASS_BARRIER},
      {"SYNCS.ARRIVE.TRANS64.A1T0", AG_SASS_SYNCS},
      {"SYNCS.PHASECHK.TRANS64.TRYWAIT", AG_SASS_SYNCS},
      {"MEMBAR.SC.GPU", AG_SASS_MEMBAR},
      {"FENCE.VIEW.ASYNC.S", AG_SASS_MEMBAR},
      {"WARPSYNC.ALL", AG_SASS_WARPSYNC},
      {"BSSY", AG_SASS_WARPSYNC},
      {"NANOSLEEP", AG_SASS_CONTROL},
      {"ELECT", AG_SASS_PREDICATE},
      {"BRA", AG_SASS_CONTROL},
      {"@!P1 BRA.U", AG_SASS_CONTROL},
      {"EXIT", AG_SASS_CONTROL},
      {"CALL.REL.NOINC", AG_SASS_CONTROL},
      {"RET.REL.NODEC", AG_SASS_CONTROL},
      {"IADD3", AG_SASS_INTEGER},
      {"IMAD.WIDE.U32", AG_SASS_INTEGER},
      {"LOP3.LUT", AG_SASS_INTEGER},
      {"ISETP.GE.AND", AG_SASS_INTEGER},
      {"UIADD3", AG_SASS_INTEGER},
      {"FFMA", AG_SASS_FP32},
      {"FADD.FTZ", AG_SASS_FP32},
      {"MUFU.EX2", AG_SASS_FP32},
      {"HFMA2.MMA", AG_SASS_FP16},
      {"DFMA", AG_SASS_FP64},
      {"F2FP.BF16.F32.PACK_AB", AG_SASS_CONVERSION},
      {"I2F.U32", AG_SASS_CONVERSION},
      {"F2I.TRUNC", AG_SASS_CONVERSION},
      {"MOV", AG_SASS_MOVE},
      {"S2R", AG_SASS_MOVE},
      {"SHFL.BFLY", AG_SASS_MOVE},
      {"PLOP3.LUT", AG_SASS_PREDICATE},
      {"VOTE.ANY", AG_SASS_PREDICATE},
      {"UMOV", AG_SASS_MOVE},
      {"USETMAXREG.DEALLOC.CTAPOOL", AG_SASS_CONTROL},
      {"UFOO", AG_SASS_UNIFORM}, /* an unlisted uniform-datapath op */
      {"NOP", AG_SASS_MISC},
      {"FROBNICATE.X", AG_SASS_MISC},
      {"", AG_SASS_MISC},
      {"  BAR.ARV", AG_SASS_BARRIER},
      {"LDGX", AG_SASS_MISC},   /* a longer name is not its prefix */
      {"LDSTS", AG_SASS_MISC},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    ag_sass_class c = ag_sass_classify(cases[i].op);
    if (c != cases[i].c)
      fprintf(stderr, "'%s': %s, expected %s\n", cases[i].op, ag_sass_class_name(c),
              ag_sass_class_name(cases[i].c));
    CHECK_EQ_INT(c, cases[i].c);
  }
  CHECK_EQ_INT(ag_sass_classify(NULL), AG_SASS_MISC);
}

TEST(class_names_and_barriers) {
  CHECK_EQ_STR(ag_sass_class_name(AG_SASS_TENSOR), "tensor");
  CHECK_EQ_STR(ag_sass_class_name(AG_SASS_MISC), "misc");
  CHECK_EQ_STR(ag_sass_class_name(AG_SASS__NCLASS), "?");
  int barriers = 0;
  for (int c = 0; c < AG_SASS__NCLASS; c++) {
    CHECK(strcmp(ag_sass_class_name((ag_sass_class)c), "?") != 0);
    barriers += ag_sass_class_is_barrier((ag_sass_class)c);
  }
  CHECK_EQ_INT(barriers, 4);
  CHECK(ag_sass_class_is_barrier(ag_sass_classify("SYNCS.EXCH.64")));
  CHECK(ag_sass_class_is_barrier(ag_sass_classify("BAR.SYNC")));
  CHECK(ag_sass_class_is_barrier(ag_sass_classify("MEMBAR.ALL.CTA")));
  CHECK(ag_sass_class_is_barrier(ag_sass_classify("WARPSYNC")));
  CHECK(!ag_sass_class_is_barrier(ag_sass_classify("BRA")));
  CHECK(!ag_sass_class_is_barrier(ag_sass_classify("HGMMA.64x64x16.F32")));
}

RUN_TESTS(T(opcodes_classify), T(class_names_and_barriers))
