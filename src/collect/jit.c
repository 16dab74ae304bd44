/*
 * jit.c — PTX -> cubin with ptxas, compiled as the user's own build does.
 *
 * nvcc compiles a .cu file by running ptxas on its PTX with options it
 * derives from the user's flags (`nvcc -dryrun` prints them); a variant is
 * compiled by the same ptxas binary with the same options, so the trace-free
 * variant's machine code is the user's (docs/build-fidelity.md). ptxas runs
 * as a process (argv, never a shell) on a temporary copy of the PTX: whole
 * program unless the options say --compile-only, never relocatable by
 * accident as nvJitLink compiles PTX input. `-v` is added when absent (it
 * changes no code, tests/ptx/test_build_fidelity checks the bytes); its info
 * log (registers, barriers, stack, spills, shared memory per function) is
 * kept verbatim and parsed; a ptxas error ("ptxas /tmp/x.ptx, line 42;
 * error : ...") becomes a diagnostic at that PTX line with its source text.
 *
 * Load: one compile per variant (tens of ms to seconds, all ptxas; the
 * process costs a few ms more than the in-process library, measured in
 * docs/build-fidelity.md); ag_jit_compile_cached skips it on a hit.
 */
#include "argus/collect.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* -------------------------------------------------------- the compiler */

char *ag_jit_ptxas(void) {
  const char *e = getenv("ARGUS_PTXAS");
  if (e && *e)
    return access(e, X_OK) == 0 ? ag_strdup(e) : NULL;
  /* beside the nvcc that made the PTX: the ptxas nvcc itself runs */
  const char *nv = getenv("ARGUS_NVCC");
  char *w = nv && *nv ? ag_strdup(nv) : ag_which("nvcc");
  if (w) {
    char *slash = strrchr(w, '/');
    if (slash) {
      ag_str p = AG_STR_INIT;
      ag_str_printf(&p, "%.*s/ptxas", (int)(slash - w), w);
      ag_free(w);
      if (!p.oom && access(ag_str_cstr(&p), X_OK) == 0)
        return ag_str_detach(&p);
      ag_str_release(&p);
    } else {
      ag_free(w);
    }
  }
  if ((w = ag_which("ptxas")))
    return w;
  return access("/usr/local/cuda/bin/ptxas", X_OK) == 0 ? ag_strdup("/usr/local/cuda/bin/ptxas")
                                                        : NULL;
}

/* "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0.88" in out ("" when
 * the tool cannot be run). */
static void tool_version(const char *ptxas, char out[64]) {
  out[0] = 0;
  const char *argv[] = {ptxas, "--version", NULL};
  ag_str text = AG_STR_INIT;
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.capture_out = &text;
  o.timeout_s = 60;
  ag_proc_result r;
  if (ag_proc_run(&o, &r) == 0 && r.exited && r.exit_code == 0) {
    const char *v = strstr(ag_str_cstr(&text), ", V");
    if (v)
      snprintf(out, 64, "%.*s", (int)strcspn(v + 3, " \r\n"), v + 3);
  }
  ag_str_release(&text);
}

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static char version_text[64];

static void read_version(void) {
  char *ptxas = ag_jit_ptxas();
  if (ptxas)
    tool_version(ptxas, version_text);
  ag_free(ptxas);
}

const char *ag_jit_compiler_version(void) {
  pthread_once(&version_once, read_version);
  return version_text;
}

/* Another ptxas's version: the last one asked for is remembered (a python
 * spec's variants all use Triton's). */
static pthread_mutex_t other_lock = PTHREAD_MUTEX_INITIALIZER;
static char other_path[4096], other_version[64];

void ag_jit_tool_version(const char *ptxas, char out[64]) {
  if (!ptxas) {
    snprintf(out, 64, "%s", ag_jit_compiler_version());
    return;
  }
  pthread_mutex_lock(&other_lock);
  if (strcmp(other_path, ptxas) || !other_version[0]) {
    tool_version(ptxas, other_version);
    snprintf(other_path, sizeof other_path, "%s", ptxas);
  }
  snprintf(out, 64, "%s", other_version);
  pthread_mutex_unlock(&other_lock);
}

int ag_jit_version(unsigned *major, unsigned *minor) {
  *major = *minor = 0;
  const char *v = ag_jit_compiler_version();
  return sscanf(v, "%u.%u", major, minor) == 2 ? 0 : AG_EJIT;
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

/* "ptxas /tmp/argus-jit-1a2b3c.ptx, line 42; error   : Unknown modifier '.f33'"
 * (nvJitLink and the PTX compiler library write "ptxas application ptx
 * input, line 42; ..."): the file name is ours, the line is the PTX's. */
static void log_to_diags(const char *log, const char *ptx, size_t len, const char *name,
                         ag_diags *diags) {
  int any = 0;
  char line[1024];
  for (const char *l = log; next_line(&l, line);) {
    int lno = 0;
    const char *at = strncmp(line, "ptxas ", 6) == 0 ? strstr(line, ", line ") : NULL;
    if (at && sscanf(at, ", line %d;", &lno) == 1) {
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

/* The -arch of an option list ("-arch=sm_90a", "-arch", "sm_90a",
 * "--gpu-name=sm_90a"), or NULL. */
static const char *opts_arch(const char *const *opts) {
  for (int i = 0; opts && opts[i]; i++) {
    const char *o = opts[i];
    if (!strncmp(o, "-arch=", 6))
      return o + 6;
    if (!strncmp(o, "--gpu-name=", 11))
      return o + 11;
    if ((!strcmp(o, "-arch") || !strcmp(o, "--gpu-name")) && opts[i + 1])
      return opts[i + 1];
  }
  return NULL;
}

static int has_opt(const char *const *opts, const char *a, const char *b) {
  for (int i = 0; opts && opts[i]; i++)
    if (!strcmp(opts[i], a) || (b && !strcmp(opts[i], b)))
      return 1;
  return 0;
}

int ag_jit_options(const char *ptx, size_t len, const char *arch, const char *const *opts,
                   char ***out) {
  *out = NULL;
  char target[16];
  const char *oa = opts_arch(opts);
  if (!arch && !oa) {
    int rc = ag_jit_target(ptx, len, target);
    if (rc)
      return rc;
    arch = target;
  }
  int n = 0;
  while (opts && opts[n])
    n++;
  char **v = ag_calloc((size_t)n + 4, sizeof *v);
  if (!v)
    return AG_ENOMEM;
  int k = 0, rc = AG_ENOMEM;
  ag_str a = AG_STR_INIT;
  if (!oa) { /* what nvcc passes for -arch=X: -arch=X -m64 */
    ag_str_printf(&a, "-arch=%s", arch);
    if (a.oom || !(v[k++] = ag_str_detach(&a)))
      goto out;
    if (!has_opt(opts, "-m64", "-m32") && !(v[k++] = ag_strdup("-m64")))
      goto out;
  }
  for (int i = 0; i < n; i++)
    if (!(v[k++] = ag_strdup(opts[i])))
      goto out;
  rc = 0;
out:
  ag_str_release(&a);
  if (rc) {
    ag_jit_options_free(v);
    return rc;
  }
  *out = v;
  return 0;
}

void ag_jit_options_free(char **opts) {
  if (!opts)
    return;
  for (char **p = opts; *p; p++)
    ag_free(*p);
  ag_free(opts);
}

/* A temporary file /tmp/argus-jit-XXXXXX<suffix> holding data (NULL: empty). */
static int temp_file(const char *suffix, const void *data, size_t len, char path[64]) {
  snprintf(path, 64, "/tmp/argus-jit-XXXXXX%s", suffix);
  int fd = mkstemps(path, (int)strlen(suffix));
  if (fd < 0) {
    path[0] = 0;
    return AG_EIO;
  }
  const char *p = data;
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w <= 0) {
      close(fd);
      return AG_EIO;
    }
    p += w;
    len -= (size_t)w;
  }
  return close(fd) ? AG_EIO : 0;
}

int ag_jit_compile_ex(const char *ptx, size_t len, const char *name, const char *arch,
                      const char *const *opts, ag_diags *diags, ag_cubin **out) {
  return ag_jit_compile_with(NULL, ptx, len, name, arch, opts, diags, out);
}

int ag_jit_compile_with(const char *tool, const char *ptx, size_t len, const char *name,
                        const char *arch, const char *const *opts, ag_diags *diags,
                        ag_cubin **out) {
  *out = NULL;
  int rc = 0;
  char in[64] = "", cub[64] = "";
  char *ptxas = NULL, **o = NULL;
  const char **argv = NULL;
  ag_str log = AG_STR_INIT, err = AG_STR_INIT;
  ag_cubin *c = ag_calloc(1, sizeof *c);
  if (!c)
    return AG_ENOMEM;
  if (!name)
    name = "module.ptx";
  if ((rc = ag_jit_options(ptx, len, arch, opts, &o))) {
    if (rc == AG_ENOMEM)
      goto out;
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0,
                 rc == AG_ENOTFOUND
                     ? "the PTX has no .target directive: cannot tell which GPU to compile for"
                     : "the PTX's .target directive names no architecture");
    rc = AG_EPARSE;
    goto out;
  }
  const char *oa = opts_arch((const char *const *)o);
  if (!oa || strlen(oa) >= sizeof c->arch) {
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0, "bad architecture '%s'",
                 oa ? oa : "");
    rc = AG_EINVAL;
    goto out;
  }
  strcpy(c->arch, oa);
  if (tool && access(tool, X_OK) != 0) {
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0,
                 "cannot compile: the ptxas '%s' is not an executable file", tool);
    rc = AG_ENOTFOUND;
    goto out;
  }
  if (!(ptxas = tool ? ag_strdup(tool) : ag_jit_ptxas())) {
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0,
                 "cannot compile: no ptxas found (set ARGUS_PTXAS, or put the CUDA "
                 "toolkit's bin directory in PATH)");
    rc = AG_ENOTFOUND;
    goto out;
  }
  int n = 0;
  while (o[n])
    n++;
  if (!(argv = ag_calloc((size_t)n + 8, sizeof *argv))) {
    rc = AG_ENOMEM;
    goto out;
  }
  if ((rc = temp_file(".ptx", ptx, len, in)) || (rc = temp_file(".cubin", NULL, 0, cub))) {
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0,
                 "cannot write a temporary file in /tmp for ptxas: %s", ag_strerror(rc));
    goto out;
  }
  int a = 0;
  argv[a++] = ptxas;
  for (int i = 0; i < n; i++)
    argv[a++] = o[i];
  if (!has_opt((const char *const *)o, "-v", "--verbose"))
    argv[a++] = "-v"; /* the info log; no change to the code */
  argv[a++] = in;
  argv[a++] = "-o";
  argv[a++] = cub;
  argv[a] = NULL;
  ag_proc_opts po;
  memset(&po, 0, sizeof po);
  po.argv = argv;
  po.capture_out = &log;
  po.capture_err = &err;
  po.timeout_s = 600;
  ag_proc_result pr;
  if ((rc = ag_proc_run(&po, &pr))) {
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0, "cannot run '%s': %s", ptxas,
                 ag_strerror(rc));
    rc = AG_EJIT;
    goto out;
  }
  if (!pr.exited || pr.exit_code) {
    ag_str both = AG_STR_INIT;
    ag_str_printf(&both, "%s%s", ag_str_cstr(&err), ag_str_cstr(&log));
    if (pr.exited)
      log_to_diags(ag_str_cstr(&both), ptx, len, name, diags);
    else {
      ag_str how = AG_STR_INIT;
      ag_proc_describe(&pr, &how);
      ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0, "ptxas did not finish (%s)",
                   ag_str_cstr(&how));
      ag_str_release(&how);
    }
    ag_str_release(&both);
    rc = AG_EJIT;
    goto out;
  }
  char *bin = NULL;
  rc = ag_file_read(cub, &bin, &c->len);
  c->data = (unsigned char *)bin;
  if (rc || c->len == 0) {
    ag_diags_add(diags, AG_SEV_ERROR, name, 0, 0, NULL, 0,
                 "ptxas wrote no cubin to '%s'", cub);
    rc = AG_EJIT;
    goto out;
  }
  /* the log: ptxas writes it to stdout; warnings go to stderr */
  if (err.len)
    ag_str_printf(&log, "%s", ag_str_cstr(&err));
  if (log.oom || !(c->info_log = ag_str_detach(&log))) {
    rc = AG_ENOMEM;
    goto out;
  }
  if ((rc = ag_jit_parse_info(c->info_log, &c->funcs, &c->nfuncs)))
    goto out;
  c->options = o;
  o = NULL;
  char ver[64];
  ag_jit_tool_version(tool, ver);
  snprintf(c->compiler, sizeof c->compiler, "ptxas %s", ver);
out:
  if (in[0])
    unlink(in);
  if (cub[0])
    unlink(cub);
  ag_free(argv);
  ag_free(ptxas);
  ag_jit_options_free(o);
  ag_str_release(&log);
  ag_str_release(&err);
  if (rc) {
    ag_cubin_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int ag_jit_compile(const char *ptx, size_t len, const char *name, const char *arch,
                   ag_diags *diags, ag_cubin **out) {
  return ag_jit_compile_ex(ptx, len, name, arch, NULL, diags, out);
}

void ag_cubin_free(ag_cubin *c) {
  if (!c)
    return;
  for (int i = 0; i < c->nfuncs; i++)
    ag_free(c->funcs[i].name);
  ag_free(c->funcs);
  ag_free(c->data);
  ag_free(c->info_log);
  ag_jit_options_free(c->options);
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
  json_t *opts = json_array();
  for (int i = 0; c->options && c->options[i]; i++)
    json_array_append_new(opts, json_string(c->options[i]));
  const char *const *o = (const char *const *)c->options;
  json_t *build = json_pack("{s:s,s:o,s:b}", "compiler", c->compiler, "options", opts,
                            "whole_program", !has_opt(o, "--compile-only", "-c"));
  return json_pack("{s:s,s:s,s:I,s:o,s:s,s:b,s:o}", "arch", c->arch, "key", c->key, "bytes",
                   (json_int_t)c->len, "functions", fs, "info_log",
                   c->info_log ? c->info_log : "", "from_cache", c->from_cache, "build",
                   build);
}
