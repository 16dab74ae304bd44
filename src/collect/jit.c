/*
 * jit.c — PTX -> cubin in-process through nvJitLink.
 *
 * One handle per compile: create with -arch and -verbose, add the PTX, link,
 * take the cubin and both logs. The info log (registers, barriers, stack,
 * spills, shared and constant memory per function) is kept verbatim and
 * parsed; a ptxas error ("ptxas application ptx input, line 42; error : ...")
 * becomes a diagnostic at that PTX line with its source text. Every
 * nvJitLink call goes through NVJ(), which records the call and the result.
 *
 * Load: one compile per variant (tens of ms for a kernel, dominated by
 * ptxas); ag_jit_compile_cached skips it on a content-hash hit.
 */
#include "argus/collect.h"

#include <nvJitLink.h>
#include <stdlib.h>
#include <string.h>

static const char *nvj_name(nvJitLinkResult r) {
  switch (r) {
  case NVJITLINK_SUCCESS: return "NVJITLINK_SUCCESS";
  case NVJITLINK_ERROR_UNRECOGNIZED_OPTION: return "NVJITLINK_ERROR_UNRECOGNIZED_OPTION";
  case NVJITLINK_ERROR_MISSING_ARCH: return "NVJITLINK_ERROR_MISSING_ARCH";
  case NVJITLINK_ERROR_INVALID_INPUT: return "NVJITLINK_ERROR_INVALID_INPUT";
  case NVJITLINK_ERROR_PTX_COMPILE: return "NVJITLINK_ERROR_PTX_COMPILE";
  case NVJITLINK_ERROR_NVVM_COMPILE: return "NVJITLINK_ERROR_NVVM_COMPILE";
  case NVJITLINK_ERROR_INTERNAL: return "NVJITLINK_ERROR_INTERNAL";
  default: return "NVJITLINK_ERROR";
  }
}

/* The one checking macro for nvJitLink: on failure records the call's text
 * and result as a diagnostic and jumps to `out` with rc = AG_EJIT. */
#define NVJ(call)                                                              \
  do {                                                                         \
    nvJitLinkResult nvj_r_ = (call);                                           \
    if (nvj_r_ != NVJITLINK_SUCCESS) {                                         \
      nvj_fail = nvj_r_;                                                       \
      nvj_call = #call;                                                        \
      rc = AG_EJIT;                                                            \
      goto out;                                                                \
    }                                                                          \
  } while (0)

int ag_jit_version(unsigned *major, unsigned *minor) {
  return nvJitLinkVersion(major, minor) == NVJITLINK_SUCCESS ? 0 : AG_EJIT;
}

int ag_jit_target(const char *ptx, size_t len, char arch[16]) {
  arch[0] = 0;
  const char *end = ptx + len;
  for (const char *p = ptx; p < end; p++) {
    if (*p != '.' || (size_t)(end - p) < 8 || strncmp(p, ".target", 7) != 0 ||
        (p[7] != ' ' && p[7] != '\t'))
      continue;
    if (p > ptx && p[-1] != '\n' && p[-1] != ' ' && p[-1] != '\t')
      continue;
    const char *q = p + 7;
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    size_t n = 0;
    while (q + n < end && (q[n] == '_' || (q[n] >= 'a' && q[n] <= 'z') ||
                           (q[n] >= '0' && q[n] <= '9')))
      n++;
    if (n == 0 || n >= 16)
      return AG_EPARSE;
    memcpy(arch, q, n);
    arch[n] = 0;
    return 0;
  }
  return AG_ENOTFOUND;
}

/* Copies the line at *l (without its newline, at most 1023 bytes) into line
 * and moves *l past it; 0 at the end of the text. */
static int next_line(const char **l, char line[1024]) {
  if (!*l || !**l)
    return 0;
  const char *nl = strchr(*l, '\n');
  size_t ll = nl ? (size_t)(nl - *l) : strlen(*l);
  size_t cp = ll < 1023 ? ll : 1023;
  memcpy(line, *l, cp);
  line[cp] = 0;
  *l = nl ? nl + 1 : NULL;
  return 1;
}

/* "ptxas application ptx input, line 42; error   : Unknown modifier '.f33'" */
static void log_to_diags(const char *log, const char *ptx, size_t len, const char *name,
                         ag_diags *diags) {
  int any = 0;
  char line[1024];
  for (const char *l = log; next_line(&l, line);) {
    int lno = 0;
    const char *at = strstr(line, "ptx input, line ");
    if (at && sscanf(at, "ptx input, line %d;", &lno) == 1) {
      const char *msg = strchr(at, ';');
      ag_severity sev = strstr(line, "; warning") ? AG_SEV_WARNING : AG_SEV_ERROR;
      msg = msg ? strchr(msg, ':') : NULL;
      msg = msg ? msg + 1 : line;
      while (*msg == ' ')
        msg++;
      size_t sl = 0;
      const char *src = ag_text_line(ptx, len, lno, &sl);
      ag_diags_add(diags, sev, name, lno, 1, src, sl, "ptxas: %s", msg);
      any = 1;
    } else if (strstr(line, "fatal") || strstr(line, "error")) {
      if (!any || !strstr(line, "aborted due to errors"))
        ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0, "%s", line);
      any = 1;
    }
  }
  if (!any)
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0,
                 "PTX compilation failed without a message");
}

static ag_jit_func *func_get(ag_jit_func **funcs, int *n, const char *name, size_t nl) {
  for (int i = 0; i < *n; i++)
    if (strlen((*funcs)[i].name) == nl && strncmp((*funcs)[i].name, name, nl) == 0)
      return &(*funcs)[i];
  ag_jit_func *nf = ag_realloc(*funcs, (size_t)(*n + 1) * sizeof *nf);
  if (!nf)
    return NULL;
  *funcs = nf;
  ag_jit_func *f = &nf[(*n)];
  memset(f, 0, sizeof *f);
  f->registers = f->barriers = f->stack_bytes = f->spill_store_bytes =
      f->spill_load_bytes = f->smem_bytes = f->cmem0_bytes = -1;
  f->name = ag_strndup(name, nl);
  if (!f->name)
    return NULL;
  (*n)++;
  return f;
}

/* Finds the quoted or bare function name after `key` in line. */
static const char *name_after(const char *line, const char *key, size_t *nl) {
  const char *p = strstr(line, key);
  if (!p)
    return NULL;
  p += strlen(key);
  while (*p == ' ')
    p++;
  if (*p == '\'') {
    const char *e = strchr(p + 1, '\'');
    if (!e)
      return NULL;
    *nl = (size_t)(e - p - 1);
    return p + 1;
  }
  size_t n = strcspn(p, " :\n'");
  *nl = n;
  return n ? p : NULL;
}

int ag_jit_parse_info(const char *log, ag_jit_func **funcs, int *nfuncs) {
  *funcs = NULL;
  *nfuncs = 0;
  ag_jit_func *cur = NULL;
  char line[1024];
  for (const char *l = log; next_line(&l, line);) {
    const char *nm;
    size_t nml = 0;
    if ((nm = name_after(line, "Compiling entry function", &nml)) ||
        (nm = name_after(line, "Function properties for", &nml))) {
      if (nml && nm[nml - 1] == ':')
        nml--;
      if (!(cur = func_get(funcs, nfuncs, nm, nml)))
        goto oom;
    } else if (cur) {
      int a, b, c, d, e, f;
      const char *p;
      if ((p = strstr(line, "bytes stack frame")) &&
          sscanf(line, "%*[^0-9]%d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                 &a, &b, &c) == 3) {
        cur->stack_bytes = a;
        cur->spill_store_bytes = b;
        cur->spill_load_bytes = c;
      } else if ((p = strstr(line, "used ")) &&
                 sscanf(p, "used %d registers, used %d barriers, %d stack, %d bytes smem, "
                           "%d bytes cmem[0], %d bytes lmem",
                        &a, &b, &c, &d, &e, &f) == 6) {
        cur->registers = a;
        cur->barriers = b;
        cur->stack_bytes = c;
        cur->smem_bytes = d;
        cur->cmem0_bytes = e;
      } else if ((p = strstr(line, "Used ")) && sscanf(p, "Used %d registers", &a) == 1) {
        cur->registers = a;
        if ((p = strstr(line, "used ")) && sscanf(p, "used %d barriers", &b) == 1)
          cur->barriers = b;
        if ((p = strstr(line, "bytes smem")) != NULL) {
          const char *q = p;
          while (q > line && q[-1] == ' ')
            q--;
          while (q > line && q[-1] >= '0' && q[-1] <= '9')
            q--;
          cur->smem_bytes = atoi(q);
        }
      }
    }
  }
  return 0;
oom:
  for (int i = 0; i < *nfuncs; i++)
    ag_free((*funcs)[i].name);
  ag_free(*funcs);
  *funcs = NULL;
  *nfuncs = 0;
  return AG_ENOMEM;
}

static char *get_log(nvJitLinkHandle h, int info) {
  size_t n = 0;
  if ((info ? nvJitLinkGetInfoLogSize(h, &n) : nvJitLinkGetErrorLogSize(h, &n)) !=
      NVJITLINK_SUCCESS)
    return ag_strdup("");
  char *s = ag_malloc(n + 1);
  if (!s)
    return NULL;
  s[0] = 0;
  if (n && (info ? nvJitLinkGetInfoLog(h, s) : nvJitLinkGetErrorLog(h, s)) !=
               NVJITLINK_SUCCESS)
    s[0] = 0;
  s[n] = 0;
  return s;
}

int ag_jit_compile(const char *ptx, size_t len, const char *name, const char *arch,
                   ag_diags *diags, ag_cubin **out) {
  *out = NULL;
  int rc = 0;
  nvJitLinkResult nvj_fail = NVJITLINK_SUCCESS;
  const char *nvj_call = NULL;
  nvJitLinkHandle h = NULL;
  char *errlog = NULL;
  ag_cubin *c = ag_calloc(1, sizeof *c);
  if (!c)
    return AG_ENOMEM;
  if (!name)
    name = "module.ptx";
  if (arch) {
    if (strlen(arch) >= sizeof c->arch) {
      ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0, "bad architecture '%s'", arch);
      rc = AG_EINVAL;
      goto out;
    }
    strcpy(c->arch, arch);
  } else if (ag_jit_target(ptx, len, c->arch)) {
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0,
                 "the PTX has no .target directive: cannot tell which GPU to compile for");
    rc = AG_EPARSE;
    goto out;
  }
  char archopt[32];
  snprintf(archopt, sizeof archopt, "-arch=%s", c->arch);
  const char *opts[] = {archopt, "-verbose"};
  NVJ(nvJitLinkCreate(&h, 2, opts));
  /* nvJitLink wants the PTX NUL-terminated within the given size */
  char *text = ag_malloc(len + 1);
  if (!text) {
    rc = AG_ENOMEM;
    goto out;
  }
  memcpy(text, ptx, len);
  text[len] = 0;
  nvJitLinkResult ar = nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, text, len + 1, name);
  ag_free(text);
  if (ar == NVJITLINK_SUCCESS)
    ar = nvJitLinkComplete(h);
  if (ar != NVJITLINK_SUCCESS) {
    errlog = get_log(h, 0);
    if (ar == NVJITLINK_ERROR_PTX_COMPILE || ar == NVJITLINK_ERROR_INVALID_INPUT) {
      log_to_diags(errlog ? errlog : "", ptx, len, name, diags);
      rc = AG_EJIT;
      goto out;
    }
    nvj_fail = ar;
    nvj_call = "nvJitLinkAddData/nvJitLinkComplete";
    rc = AG_EJIT;
    goto out;
  }
  NVJ(nvJitLinkGetLinkedCubinSize(h, &c->len));
  if (!(c->data = ag_malloc(c->len ? c->len : 1))) {
    rc = AG_ENOMEM;
    goto out;
  }
  NVJ(nvJitLinkGetLinkedCubin(h, c->data));
  if (!(c->info_log = get_log(h, 1))) {
    rc = AG_ENOMEM;
    goto out;
  }
  if ((rc = ag_jit_parse_info(c->info_log, &c->funcs, &c->nfuncs)))
    goto out;
out:
  if (nvj_call)
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0, "%s failed: %s%s%s", nvj_call,
                 nvj_name(nvj_fail), errlog && *errlog ? ": " : "", errlog ? errlog : "");
  if (h)
    nvJitLinkDestroy(&h);
  ag_free(errlog);
  if (rc) {
    ag_cubin_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

void ag_cubin_free(ag_cubin *c) {
  if (!c)
    return;
  for (int i = 0; i < c->nfuncs; i++)
    ag_free(c->funcs[i].name);
  ag_free(c->funcs);
  ag_free(c->data);
  ag_free(c->info_log);
  ag_free(c);
}

json_t *ag_cubin_to_json(const ag_cubin *c) {
  json_t *fs = json_array();
  for (int i = 0; i < c->nfuncs; i++) {
    const ag_jit_func *f = &c->funcs[i];
    json_array_append_new(
        fs, json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "name", f->name, "registers",
                      f->registers, "barriers", f->barriers, "stack_bytes", f->stack_bytes,
                      "spill_store_bytes", f->spill_store_bytes, "spill_load_bytes",
                      f->spill_load_bytes, "smem_bytes", f->smem_bytes, "cmem0_bytes",
                      f->cmem0_bytes));
  }
  return json_pack("{s:s,s:s,s:I,s:o,s:s,s:b}", "arch", c->arch, "key", c->key, "bytes",
                   (json_int_t)c->len, "functions", fs, "info_log",
                   c->info_log ? c->info_log : "", "from_cache", c->from_cache);
}
