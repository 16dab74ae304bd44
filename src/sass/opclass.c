/*
 * opclass.c — SASS opcode -> instruction class (argus/sass.h), the table
 * behind inst_mix and barriers. The opcode's base (up to the first '.') is
 * looked up in one table of Hopper (sm_90) opcodes. Opcodes not in the table are
 * "misc", never a guess; generic LD/ST/ATOM count as global memory (the
 * state space is known only at run time). Called once per PC; a linear scan
 * of ~200 short strings.
 */
#include "argus/sass.h"

#include <string.h>

typedef struct opc {
  const char *base;
  ag_sass_class cls;
} opc;

static const opc table[] = {
    /* tensor cores */
    {"HMMA", AG_SASS_TENSOR}, {"HGMMA", AG_SASS_TENSOR}, {"IMMA", AG_SASS_TENSOR},
    {"IGMMA", AG_SASS_TENSOR}, {"BMMA", AG_SASS_TENSOR}, {"BGMMA", AG_SASS_TENSOR},
    {"DMMA", AG_SASS_TENSOR}, {"QGMMA", AG_SASS_TENSOR}, {"WARPGROUP", AG_SASS_TENSOR},
    /* global and generic memory */
    {"LDG", AG_SASS_MEM_GLOBAL}, {"STG", AG_SASS_MEM_GLOBAL}, {"RED", AG_SASS_MEM_GLOBAL},
    {"REDG", AG_SASS_MEM_GLOBAL}, {"ATOMG", AG_SASS_MEM_GLOBAL}, {"ATOM", AG_SASS_MEM_GLOBAL},
    {"LD", AG_SASS_MEM_GLOBAL}, {"ST", AG_SASS_MEM_GLOBAL}, {"CCTLL", AG_SASS_MEM_GLOBAL},
    {"SUST", AG_SASS_MEM_GLOBAL}, {"SULD", AG_SASS_MEM_GLOBAL}, {"TEX", AG_SASS_MEM_GLOBAL},
    {"TLD", AG_SASS_MEM_GLOBAL}, {"QSPC", AG_SASS_MEM_GLOBAL},
    /* shared memory */
    {"LDS", AG_SASS_MEM_SHARED}, {"STS", AG_SASS_MEM_SHARED}, {"LDSM", AG_SASS_MEM_SHARED},
    {"STSM", AG_SASS_MEM_SHARED}, {"ATOMS", AG_SASS_MEM_SHARED}, {"REDS", AG_SASS_MEM_SHARED},
    {"LDSSTS", AG_SASS_MEM_SHARED},
    {"LDL", AG_SASS_MEM_LOCAL}, {"STL", AG_SASS_MEM_LOCAL},
    {"LDC", AG_SASS_MEM_CONST}, {"ULDC", AG_SASS_MEM_CONST},
    /* TMA and bulk copies */
    {"UTMALDG", AG_SASS_TMA}, {"UTMASTG", AG_SASS_TMA}, {"UTMAREDG", AG_SASS_TMA},
    {"UTMAPF", AG_SASS_TMA}, {"UTMACCTL", AG_SASS_TMA}, {"UTMACMDFLUSH", AG_SASS_TMA},
    {"UBLKCP", AG_SASS_TMA}, {"UBLKRED", AG_SASS_TMA}, {"UBLKPF", AG_SASS_TMA},
    /* cp.async */
    {"LDGSTS", AG_SASS_LDGSTS}, {"LDGDEPBAR", AG_SASS_LDGSTS}, {"ARRIVES", AG_SASS_LDGSTS},
    /* barriers and synchronization */
    {"BAR", AG_SASS_BARRIER}, {"B2R", AG_SASS_BARRIER}, {"R2B", AG_SASS_BARRIER},
    {"UCGABAR_ARV", AG_SASS_BARRIER}, {"UCGABAR_WAIT", AG_SASS_BARRIER},
    {"SYNCS", AG_SASS_SYNCS},
    {"MEMBAR", AG_SASS_MEMBAR}, {"FENCE", AG_SASS_MEMBAR}, {"ERRBAR", AG_SASS_MEMBAR},
    {"CCTL", AG_SASS_MEMBAR}, {"DEPBAR", AG_SASS_MEMBAR},
    {"WARPSYNC", AG_SASS_WARPSYNC}, {"BSSY", AG_SASS_WARPSYNC}, {"BSYNC", AG_SASS_WARPSYNC},
    {"NANOSLEEP", AG_SASS_CONTROL}, {"YIELD", AG_SASS_CONTROL}, {"ELECT", AG_SASS_PREDICATE},
    {"UELECT", AG_SASS_PREDICATE}, {"MATCH", AG_SASS_PREDICATE},
    /* control */
    {"BRA", AG_SASS_CONTROL}, {"BRX", AG_SASS_CONTROL}, {"JMP", AG_SASS_CONTROL},
    {"JMX", AG_SASS_CONTROL}, {"CALL", AG_SASS_CONTROL}, {"RET", AG_SASS_CONTROL},
    {"EXIT", AG_SASS_CONTROL}, {"BREAK", AG_SASS_CONTROL}, {"BPT", AG_SASS_CONTROL},
    {"KILL", AG_SASS_CONTROL}, {"BMOV", AG_SASS_CONTROL}, {"RPCMOV", AG_SASS_CONTROL},
    {"ACQBULK", AG_SASS_CONTROL}, {"ENDCOLLECTIVE", AG_SASS_CONTROL},
    {"UBRA", AG_SASS_CONTROL}, {"UJMP", AG_SASS_CONTROL}, {"USETMAXREG", AG_SASS_CONTROL},
    /* integer */
    {"IADD3", AG_SASS_INTEGER}, {"IADD", AG_SASS_INTEGER}, {"IMAD", AG_SASS_INTEGER},
    {"IMUL", AG_SASS_INTEGER}, {"IMNMX", AG_SASS_INTEGER}, {"IABS", AG_SASS_INTEGER},
    {"ISETP", AG_SASS_INTEGER}, {"LOP3", AG_SASS_INTEGER}, {"LOP", AG_SASS_INTEGER},
    {"SHF", AG_SASS_INTEGER}, {"SHL", AG_SASS_INTEGER}, {"SHR", AG_SASS_INTEGER},
    {"LEA", AG_SASS_INTEGER}, {"FLO", AG_SASS_INTEGER}, {"POPC", AG_SASS_INTEGER},
    {"BREV", AG_SASS_INTEGER}, {"BMSK", AG_SASS_INTEGER}, {"SGXT", AG_SASS_INTEGER},
    {"IDP", AG_SASS_INTEGER}, {"VABSDIFF", AG_SASS_INTEGER}, {"VABSDIFF4", AG_SASS_INTEGER},
    {"VIADD", AG_SASS_INTEGER}, {"VIMNMX", AG_SASS_INTEGER}, {"VIMNMX3", AG_SASS_INTEGER},
    {"UIADD3", AG_SASS_INTEGER}, {"UIMAD", AG_SASS_INTEGER}, {"ULOP3", AG_SASS_INTEGER},
    {"USHF", AG_SASS_INTEGER}, {"ULEA", AG_SASS_INTEGER}, {"UISETP", AG_SASS_INTEGER},
    {"UFLO", AG_SASS_INTEGER}, {"UPOPC", AG_SASS_INTEGER}, {"USGXT", AG_SASS_INTEGER},
    {"UBMSK", AG_SASS_INTEGER}, {"UBREV", AG_SASS_INTEGER}, {"UIMNMX", AG_SASS_INTEGER},
    {"ULOP", AG_SASS_INTEGER}, {"USHL", AG_SASS_INTEGER}, {"USHR", AG_SASS_INTEGER},
    /* fp32 */
    {"FADD", AG_SASS_FP32}, {"FMUL", AG_SASS_FP32}, {"FFMA", AG_SASS_FP32},
    {"FFMA32I", AG_SASS_FP32}, {"FADD32I", AG_SASS_FP32}, {"FMUL32I", AG_SASS_FP32},
    {"FMNMX", AG_SASS_FP32}, {"FSETP", AG_SASS_FP32}, {"FSET", AG_SASS_FP32},
    {"FSEL", AG_SASS_FP32}, {"FSWZADD", AG_SASS_FP32}, {"FCHK", AG_SASS_FP32},
    {"MUFU", AG_SASS_FP32}, {"FMNMX3", AG_SASS_FP32},
    /* fp16 / bf16 packed */
    {"HADD2", AG_SASS_FP16}, {"HMUL2", AG_SASS_FP16}, {"HFMA2", AG_SASS_FP16},
    {"HMNMX2", AG_SASS_FP16}, {"HSETP2", AG_SASS_FP16}, {"HSET2", AG_SASS_FP16},
    /* fp64 */
    {"DADD", AG_SASS_FP64}, {"DMUL", AG_SASS_FP64}, {"DFMA", AG_SASS_FP64},
    {"DSETP", AG_SASS_FP64}, {"DMNMX", AG_SASS_FP64},
    /* conversion */
    {"F2F", AG_SASS_CONVERSION}, {"F2I", AG_SASS_CONVERSION}, {"I2F", AG_SASS_CONVERSION},
    {"I2I", AG_SASS_CONVERSION}, {"FRND", AG_SASS_CONVERSION}, {"F2FP", AG_SASS_CONVERSION},
    {"I2IP", AG_SASS_CONVERSION}, {"F2IP", AG_SASS_CONVERSION}, {"I2FP", AG_SASS_CONVERSION},
    {"UF2FP", AG_SASS_CONVERSION},
    /* moves and data movement between lanes / registers */
    {"MOV", AG_SASS_MOVE}, {"MOV32I", AG_SASS_MOVE}, {"SEL", AG_SASS_MOVE},
    {"PRMT", AG_SASS_MOVE}, {"SHFL", AG_SASS_MOVE}, {"S2R", AG_SASS_MOVE},
    {"S2UR", AG_SASS_MOVE}, {"CS2R", AG_SASS_MOVE}, {"R2UR", AG_SASS_MOVE},
    {"UMOV", AG_SASS_MOVE}, {"USEL", AG_SASS_MOVE}, {"UPRMT", AG_SASS_MOVE},
    {"LEPC", AG_SASS_MOVE}, {"REDUX", AG_SASS_MOVE}, {"CREDUX", AG_SASS_MOVE},
    {"UCLEA", AG_SASS_MOVE}, {"GETLMEMBASE", AG_SASS_MOVE}, {"SETLMEMBASE", AG_SASS_MOVE},
    /* predicates */
    {"PLOP3", AG_SASS_PREDICATE}, {"P2R", AG_SASS_PREDICATE}, {"R2P", AG_SASS_PREDICATE},
    {"VOTE", AG_SASS_PREDICATE}, {"VOTEU", AG_SASS_PREDICATE}, {"UPLOP3", AG_SASS_PREDICATE},
    {"UP2UR", AG_SASS_PREDICATE}, {"UR2UP", AG_SASS_PREDICATE}, {"PSETP", AG_SASS_PREDICATE},
    {"NOP", AG_SASS_MISC},
};

ag_sass_class ag_sass_classify(const char *op) {
  if (!op)
    return AG_SASS_MISC;
  while (*op == ' ' || *op == '\t')
    op++;
  if (*op == '@') { /* a guard: "@!P0 ", "@UP1 " */
    while (*op && *op != ' ' && *op != '\t')
      op++;
    while (*op == ' ' || *op == '\t')
      op++;
  }
  size_t n = 0;
  while (op[n] && op[n] != '.' && op[n] != ' ' && op[n] != '\t' && op[n] != ';')
    n++;
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
    if (strlen(table[i].base) != n || memcmp(table[i].base, op, n))
      continue;
    return table[i].cls;
  }
  /* the uniform datapath's other ops (UIADD3, ULOP3 are listed) */
  if (n > 1 && op[0] == 'U')
    return AG_SASS_UNIFORM;
  return AG_SASS_MISC;
}

const char *ag_sass_class_name(ag_sass_class c) {
#define AG__SASS_CLASS_NAME(name, text) text,
  static const char *const names[] = {AG_SASS_CLASS_MAP(AG__SASS_CLASS_NAME)};
#undef AG__SASS_CLASS_NAME
  return (unsigned)c < AG_SASS__NCLASS ? names[c] : "?";
}

int ag_sass_class_is_barrier(ag_sass_class c) {
  return c == AG_SASS_BARRIER || c == AG_SASS_SYNCS || c == AG_SASS_MEMBAR ||
         c == AG_SASS_WARPSYNC;
}
