/*
 * atoms.c — TV layouts of mma.sync m16n8k16, ldmatrix .x4 and the wgmma
 * m64nNk16 register operands, A and the accumulator (see
 * argus/layout_atoms.h for the conventions).
 *
 * Each layout is the PTX ISA's fragment formula rewritten as strides. With
 * lane t = tig + 4*gid (tig = t % 4, gid = t / 4) and, for wgmma, thread
 * t = tig + 4*gid + 32*w:
 *   mma A  (16x16): v = i0 + 2*i1 + 4*i2 -> row gid + 8*i1, col 2*tig + i0 + 8*i2
 *                   offset = 32*tig + gid + 16*i0 + 8*i1 + 128*i2
 *   mma B  (8x16):  v = i0 + 2*i1 -> n = gid, k = 2*tig + i0 + 8*i1
 *                   offset = 16*tig + gid + 8*i0 + 64*i1
 *   mma C  (16x8):  v = i0 + 2*i1 -> row gid + 8*i1, col 2*tig + i0
 *                   offset = 32*tig + gid + 16*i0 + 8*i1
 *   ldmatrix (32x8): v = j + 2*i (register i, half j) -> row 8*i + gid,
 *                   col 2*tig + j; offset = 64*tig + gid + 32*j + 8*i
 *   wgmma A (64x16): v = i0 + 2*i1 + 4*i2 -> row 16*w + gid + 8*i1,
 *                   col 2*tig + i0 + 8*i2 (mma A per warp, warp w's rows);
 *                   offset = 128*tig + gid + 16*w + 64*i0 + 8*i1 + 512*i2
 *   wgmma D (64xN): v = i0 + 2*i1 + 4*i2 -> row 16*w + gid + 8*i1,
 *                   col 8*i2 + 2*tig + i0;
 *                   offset = 128*tig + gid + 16*w + 64*i0 + 8*i1 + 512*i2
 * The tests check them against the ISA's formulas, not against these lines.
 */
#include "argus/layout_atoms.h"

#include "layout_int.h"

static int build(ag_layout_ctx *c, const char *text, ag_layout *tv) {
  const char *saved = c->src_name;
  c->src_name = NULL;
  int rc = ag_layout_parse(c, text, NULL, tv);
  c->src_name = saved;
  return rc;
}

int ag_atom_mma_m16n8k16_a(ag_layout_ctx *c, ag_layout *tv) {
  return build(c, "((4,8),(2,2,2)):((32,1),(16,8,128))", tv);
}

int ag_atom_mma_m16n8k16_b(ag_layout_ctx *c, ag_layout *tv) {
  return build(c, "((4,8),(2,2)):((16,1),(8,64))", tv);
}

int ag_atom_mma_m16n8k16_c(ag_layout_ctx *c, ag_layout *tv) {
  return build(c, "((4,8),(2,2)):((32,1),(16,8))", tv);
}

int ag_atom_ldmatrix_x4(ag_layout_ctx *c, ag_layout *tv) {
  return build(c, "((4,8),(2,4)):((64,1),(32,8))", tv);
}

int ag_atom_ldmatrix_x4_src(ag_layout_ctx *c, ag_layout *tv) {
  return build(c, "(32,8):(1,32)", tv);
}

static int check_n(ag_layout_ctx *c, int n) {
  if (n < 8 || n > 256 || n % 8)
    return ag__lfail(c, AG_EINVAL, "wgmma m64nNk16: N must be a multiple of 8 in 8..256, not %d",
                     n);
  return 0;
}

int ag_atom_wgmma_m64nNk16_d(ag_layout_ctx *c, int n, ag_layout *tv) {
  int rc = check_n(c, n);
  if (rc)
    return rc;
  char text[96];
  snprintf(text, sizeof text, "((4,8,4),(2,2,%d)):((128,1,16),(64,8,512))", n / 8);
  return build(c, text, tv);
}

int ag_atom_wgmma_m64nNk16_a(ag_layout_ctx *c, ag_layout *tv) {
  return build(c, "((4,8,4),(2,2,2)):((128,1,16),(64,8,512))", tv);
}

typedef struct atom {
  const char *name, *axes;
  int (*make)(ag_layout_ctx *, ag_layout *);
  int64_t threads, values, rows, cols;
} atom;

static const atom atoms[] = {
    {"mma.m16n8k16.a", "M x K", ag_atom_mma_m16n8k16_a, 32, 8, 16, 16},
    {"mma.m16n8k16.b", "N x K", ag_atom_mma_m16n8k16_b, 32, 4, 8, 16},
    {"mma.m16n8k16.c", "M x N", ag_atom_mma_m16n8k16_c, 32, 4, 16, 8},
    {"mma.m16n8k16.d", "M x N", ag_atom_mma_m16n8k16_c, 32, 4, 16, 8},
    {"ldmatrix.x4", "stacked rows x 8", ag_atom_ldmatrix_x4, 32, 8, 32, 8},
    {"ldmatrix.x4.src", "stacked rows x 8", ag_atom_ldmatrix_x4_src, 32, 8, 32, 8},
    {"wgmma.m64nNk16.a", "M x K", ag_atom_wgmma_m64nNk16_a, 128, 8, 64, 16},
};

int ag_atom_layout(ag_layout_ctx *c, const char *name, ag_layout *tv, ag_atom_info *info) {
  tv->shape = tv->stride = NULL;
  for (size_t i = 0; i < sizeof atoms / sizeof atoms[0]; i++) {
    if (strcmp(name, atoms[i].name) != 0)
      continue;
    int rc = atoms[i].make(c, tv);
    if (!rc && info)
      *info = (ag_atom_info){atoms[i].name, atoms[i].axes, atoms[i].threads, atoms[i].values,
                             atoms[i].rows, atoms[i].cols};
    return rc;
  }
  const char *pfx = "wgmma.m64n", *p = name + strlen(pfx);
  int n = 0, digits = 0;
  if (strncmp(name, pfx, strlen(pfx)) == 0) {
    for (; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
      n = n * 10 + (*p - '0');
  }
  int is_a = strcmp(p, "k16.a") == 0;
  if (digits > 0 && name[strlen(pfx)] != '0' && (is_a || strcmp(p, "k16.d") == 0)) {
    int rc = is_a ? check_n(c, n) : 0;
    if (!rc)
      rc = is_a ? ag_atom_wgmma_m64nNk16_a(c, tv) : ag_atom_wgmma_m64nNk16_d(c, n, tv);
    if (!rc && info) {
      const char *canon = ag_arena_printf(c->arena, "wgmma.m64n%dk16.%c", n, is_a ? 'a' : 'd');
      if (!canon)
        return ag__loom(c);
      *info = is_a ? (ag_atom_info){canon, "M x K", 128, 8, 64, 16}
                   : (ag_atom_info){canon, "M x N", 128, n / 2, 64, n};
    }
    return rc;
  }
  return ag__lfail(c, AG_ENOTFOUND,
                   "unknown atom '%s'; known: mma.m16n8k16.a, mma.m16n8k16.b, mma.m16n8k16.c "
                   "(= .d), ldmatrix.x4, ldmatrix.x4.src, wgmma.m64n<N>k16.a (or "
                   "wgmma.m64nNk16.a), wgmma.m64n<N>k16.d (N = 8..256 step 8)",
                   name);
}
