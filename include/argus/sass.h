/*
 * argus/sass.h — what Argus reads from a cubin without a disassembler: the
 * SASS code sections, the functions in them, the SASS-offset -> PTX-line
 * table that `ptxas -lineinfo` leaves in `.nv_debug_line_sass`, and the
 * instruction classes of SASS opcodes (docs/attribution.md).
 *
 * `ptxas -lineinfo` leaves every `.text.<kernel>` section byte-identical
 * (tests/sass/test_sass_lineinfo.c checks it on the examples and the
 * recorded Triton PTX) and adds `.nv_debug_line_sass`: a DWARF (v2) line
 * program whose DW_LNE_set_address operands are relocated against the
 * kernel symbols, and whose lines are the lines of the PTX ptxas read.
 * Pure CPU; ELF and DWARF are read with bounds checks on every access, so
 * any input gives an answer or AG_EPARSE with a diagnostic.
 */
#ifndef ARGUS_SASS_H
#define ARGUS_SASS_H

#include "argus/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ag_sass_text {
  char *kernel;          /* "<kernel>" of the section ".text.<kernel>" */
  const uint8_t *bytes;  /* the section's contents (in the cubin's copy) */
  uint64_t size;
} ag_sass_text;

typedef struct ag_sass_sym {
  char *name;   /* symbol name: the kernel, or "$<kernel>$<func>" for a .func */
  int text;     /* index into texts */
  uint64_t offset, size;
} ag_sass_sym;

/* One row of the line table: the SASS instruction(s) at text offsets
 * [pc, next row's pc) of texts[text] come from line `line` of `file`. end_seq:
 * the row ends a sequence (no instruction at pc). */
typedef struct ag_sass_row {
  int text;
  uint64_t pc;
  int line;
  int file;    /* 0: the PTX ptxas read (all ptxas 13.0 writes here); k > 0:
                  the k-th file of the line program's header */
  int end_seq;
} ag_sass_row;

typedef struct ag_sass_cubin {
  char *data; /* owned copy of the image */
  size_t len;
  ag_sass_text *texts;
  int ntexts;
  ag_sass_sym *funcs; /* FUNC symbols in code sections */
  int nfuncs;
  ag_sass_row *rows;  /* in line-program order */
  int nrows;
  int has_lineinfo;   /* a .nv_debug_line_sass section was present */
  int sm;             /* the SASS architecture (90: sm_90 and sm_90a), from the ELF
                         header's flags; 0 when not known */
} ag_sass_cubin;

/* Parses a 64-bit ELF cubin image. `name` names it in diagnostics. On
 * success *out is owned (ag_sass_cubin_free). Malformed ELF or DWARF: AG_EPARSE
 * with a diagnostic naming the section and the offset. */
int ag_sass_cubin_parse(const void *data, size_t len, const char *name, ag_diags *diags,
                   ag_sass_cubin **out);
int ag_sass_cubin_load(const char *path, ag_diags *diags, ag_sass_cubin **out);
void ag_sass_cubin_free(ag_sass_cubin *c); /* NULL: no-op */

/* The text section of a kernel, or -1. */
int ag_sass_cubin_text(const ag_sass_cubin *c, const char *kernel);
/* The PTX line of the instruction at offset pc of texts[text], by the DWARF
 * rule: the last row at or before pc in a sequence that covers pc. Several
 * rows at one address: the last one (the earlier ones cover no bytes).
 * AG_ENOTFOUND when no row covers pc, when that row names another file than
 * the PTX (file > 0; ptxas 13.0 writes none: PTX with .loc keeps its
 * source lines in .debug_line), or when the cubin has no line info. */
int ag_sass_cubin_pc_line(const ag_sass_cubin *c, int text, uint64_t pc, int *line);
/* The function (index into funcs) whose code covers pc of texts[text], or -1. */
int ag_sass_cubin_pc_func(const ag_sass_cubin *c, int text, uint64_t pc);

/* The offset in the code section of `kernel` of the instruction at
 * pc_offset of `function`, as CUPTI keys SASS metrics (function name,
 * pcOffset from the function's start): the kernel itself, or a .func whose
 * code lies in the kernel's section (symbol "$<kernel>$<function>"). 0 on
 * success; AG_ENOTFOUND when the cubin has no such kernel or function, or
 * the offset is past the function's end. */
int ag_sass_cubin_section_pc(const ag_sass_cubin *c, const char *kernel, const char *function,
                        uint64_t pc_offset, uint64_t *pc);

/* --------------------------------------- control flow and padding (sm_90) */
/* What the padding rule needs of one SASS instruction, decoded from the
 * cubin's code (src/sass/padding.c says which bits). */
typedef enum ag_sass_ctl_kind {
  AG_SASS_CTL_OTHER,
  AG_SASS_CTL_NOP,
  AG_SASS_CTL_BRA,
  AG_SASS_CTL_EXIT,
  AG_SASS_CTL_RET
} ag_sass_ctl_kind;

typedef struct ag_sass_ctl {
  uint64_t pc;           /* offset in the code section */
  ag_sass_ctl_kind kind;
  int guarded;           /* 1: under a predicate other than PT */
  int64_t target;        /* a BRA's target (offset in the section), else -1 */
} ag_sass_ctl;

/* Decodes the instruction at offset pc of texts[text]. AG_EUNSUPPORTED when
 * the cubin's SASS is not sm_90 (c->sm), AG_EINVAL for a PC outside the
 * section or not on an instruction. */
int ag_sass_decode_ctl(const ag_sass_cubin *c, int text, uint64_t pc, ag_sass_ctl *out);
/* The padding rule on one function's instructions (n of them, ascending
 * PCs, 16 bytes apart): the index of its first padding instruction, n when
 * it has none. Padding: the instructions after the function's last RET or
 * EXIT, when that one is unguarded, every one after it is a NOP or an
 * unguarded BRA to itself, and no BRA of the function branches into them
 * (but a self-branch to itself). A self-loop anywhere else is code. */
int ag_sass_padding_start(const ag_sass_ctl *ins, int n);
/* Marks pad[p] = 1 for every padding PC p * 16 of texts[text], function by
 * function (a function's code ends where the next one placed in it begins),
 * 0 for the others; pad holds size / 16 bytes (the caller's). Returns how
 * many it marked; AG_EUNSUPPORTED (nothing marked) when the SASS is not
 * sm_90, AG_EINVAL for a bad text index, AG_ENOMEM. */
int ag_sass_cubin_padding(const ag_sass_cubin *c, int text, unsigned char *pad);

/* ------------------------------------------------------- opcode classes */
/* Instruction classes of inst_mix and barriers (docs/attribution.md). */
#define AG_SASS_CLASS_MAP(X)                                                   \
  X(TENSOR, "tensor")           /* HMMA, HGMMA, IMMA, ... */                   \
  X(MEM_GLOBAL, "mem_global")   /* LDG, STG, RED, ATOMG, LD/ST generic */     \
  X(MEM_SHARED, "mem_shared")   /* LDS, STS, LDSM, ATOMS */                    \
  X(MEM_LOCAL, "mem_local")     /* LDL, STL */                                 \
  X(MEM_CONST, "mem_const")     /* LDC, ULDC */                                \
  X(TMA, "tma")                 /* UTMALDG, UTMASTG, UBLKCP, ... */            \
  X(LDGSTS, "ldgsts")           /* LDGSTS, LDGDEPBAR */                        \
  X(BARRIER, "barrier")         /* BAR */                                      \
  X(SYNCS, "syncs")             /* SYNCS.* (mbarrier) */                       \
  X(MEMBAR, "membar")           /* MEMBAR, FENCE, ERRBAR, CCTL */              \
  X(WARPSYNC, "warpsync")       /* WARPSYNC, BSSY, BSYNC */                    \
  X(CONTROL, "control")         /* BRA, EXIT, CALL, RET, NANOSLEEP, ... */       \
  X(INTEGER, "integer")         /* IADD3, IMAD, LOP3, SHF, ISETP, ... */       \
  X(FP32, "fp32")               /* FADD, FMUL, FFMA, FSETP, MUFU, ... */       \
  X(FP16, "fp16")               /* HADD2, HFMA2, ... */                        \
  X(FP64, "fp64")               /* DADD, DFMA, ... */                          \
  X(CONVERSION, "conversion")   /* F2F, F2I, I2F, FRND, ... */                 \
  X(MOVE, "move")               /* MOV, SEL, PRMT, SHFL, S2R, CS2R, ... */     \
  X(PREDICATE, "predicate")     /* PLOP3, P2R, R2P, VOTE, ELECT, MATCH */       \
  X(UNIFORM, "uniform")         /* U* datapath ops not listed above */         \
  X(MISC, "misc")               /* NOP, and opcodes not in the table */

#define AG__SASS_CLASS_ENUM(name, text) AG_SASS_##name,
typedef enum ag_sass_class { AG_SASS_CLASS_MAP(AG__SASS_CLASS_ENUM) AG_SASS__NCLASS } ag_sass_class;
#undef AG__SASS_CLASS_ENUM

/* The class of a SASS opcode as cuobjdump / nvdisasm / CUPTI print it, with
 * or without modifiers and a guard ("@!P0 LDG.E.128", "HGMMA.64x128x16.F32",
 * "SYNCS.ARRIVE.TRANS64.A1T0"). Case matters (SASS is upper case); unknown
 * opcodes are AG_SASS_MISC. */
ag_sass_class ag_sass_classify(const char *opcode);
const char *ag_sass_class_name(ag_sass_class c); /* "tensor"; "?" */
/* 1 for the classes that `barriers` reports (barrier, syncs, membar,
 * warpsync). */
int ag_sass_class_is_barrier(ag_sass_class c);

#ifdef __cplusplus
}
#endif
#endif
