/*
 * triton.c — a python spec's module (docs/triton.md): the discovery run of
 * the user's script with Triton's dump on, the dump directory's layout, and
 * where Triton 3.6 reads an override.
 *
 * Triton 3.6 (triton/compiler/compiler.py, triton/runtime/cache.py) keeps
 * each compiled kernel as <dir>/<key>/<name>.<stage>, <key> the base32 of a
 * hash of the kernel's source, signature, constants and attributes (not of
 * Triton's version or options), <name> the @triton.jit function's name.
 * The dump (TRITON_KERNEL_DUMP=1, TRITON_DUMP_DIR) writes every stage there
 * (.ttir .ttgir .llir .ptx .cubin .sass); the override (TRITON_KERNEL_OVERRIDE
 * =1, TRITON_OVERRIDE_DIR) reads a stage from that path in place of the
 * compiler's output, and compiles the later stages from it. Both happen only
 * when Triton compiles: a kernel in Triton's cache is not compiled again
 * unless TRITON_ALWAYS_COMPILE=1.
 *
 * One discovery per command that loads the spec: the script runs once (its
 * own time, on the GPU machine seconds to minutes).
 */
#include "argus/spec.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DISCOVER_TIMEOUT_S 600.0

const char *ag_spec_python_exe(void) {
  const char *e = getenv("ARGUS_PYTHON");
  return e && *e ? e : "python3";
}

char **ag_spec_python_argv(const ag_spec *s) {
  char **v = ag_calloc((size_t)s->npython_args + 3, sizeof *v);
  if (!v)
    return NULL;
  int ok = (v[0] = ag_strdup(ag_spec_python_exe())) && (v[1] = ag_strdup(s->python));
  for (int i = 0; ok && i < s->npython_args; i++)
    ok = (v[i + 2] = ag_strdup(s->python_args[i])) != NULL;
  if (!ok) {
    ag_spec_options_free(v);
    return NULL;
  }
  return v;
}

/* The last `max` bytes of text, from a line start when one is near. */
static const char *tail(const char *text, size_t max) {
  size_t n = strlen(text);
  if (n <= max)
    return text;
  const char *p = text + n - max, *nl = strchr(p, '\n');
  return nl && nl[1] ? nl + 1 : p;
}

int ag_triton_dump(const ag_spec *s, const char *dump_dir, const char *cache_dir,
                   double timeout_s, ag_diags *d) {
  char **argv = ag_spec_python_argv(s);
  ag_str env = AG_STR_INIT, cenv = AG_STR_INIT, err = AG_STR_INIT, how = AG_STR_INIT;
  char *abs = ag_path_abs(dump_dir), *cabs = cache_dir ? ag_path_abs(cache_dir) : NULL;
  int rc = 0;
  if (!argv || !abs || (cache_dir && !cabs) ||
      ag_str_printf(&env, "TRITON_DUMP_DIR=%s", abs) < 0 ||
      (cabs && ag_str_printf(&cenv, "TRITON_CACHE_DIR=%s", cabs) < 0) || env.oom ||
      cenv.oom) {
    rc = AG_ENOMEM;
    goto out;
  }
  const char *add[] = {"TRITON_KERNEL_DUMP=1", ag_str_cstr(&env), "TRITON_ALWAYS_COMPILE=1",
                       cabs ? ag_str_cstr(&cenv) : NULL, NULL};
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = (const char *const *)argv;
  o.env_add = add;
  o.cwd = s->dir;
  o.capture_err = &err;
  o.stdout_path = "/dev/null";
  o.timeout_s = timeout_s;
  ag_proc_result res;
  if ((rc = ag_proc_run(&o, &res))) {
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "cannot run %s to discover the Triton kernels of '%s': %s (set ARGUS_PYTHON)",
                 argv[0], s->python, ag_strerror(rc));
    goto out;
  }
  if (!res.exited || res.exit_code) {
    ag_proc_describe(&res, &how);
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "the Python program '%s' failed (%s) while Argus discovered its Triton "
                 "kernels:\n%s",
                 s->python, ag_str_cstr(&how), tail(ag_str_cstr(&err), 2000));
    rc = AG_ECHILD;
  }
out:
  ag_spec_options_free(argv);
  ag_free(abs);
  ag_free(cabs);
  ag_str_release(&env);
  ag_str_release(&cenv);
  ag_str_release(&err);
  ag_str_release(&how);
  return rc;
}

void ag_triton_kernels_free(ag_triton_kernel *k, int n) {
  for (int i = 0; k && i < n; i++) {
    ag_free(k[i].name);
    ag_free(k[i].key);
    ag_free(k[i].ptx);
  }
  ag_free(k);
}

static int by_name_key(const void *a, const void *b) {
  const ag_triton_kernel *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->key, y->key);
}

/* Appends the kernels of one <key> directory. */
static int scan_key(const char *dir, const char *key, ag_triton_kernel **v, int *n, int *cap) {
  ag_str kd = AG_STR_INIT;
  ag_str_printf(&kd, "%s/%s", dir, key);
  if (kd.oom)
    return AG_ENOMEM;
  DIR *dp = opendir(ag_str_cstr(&kd));
  int rc = 0;
  struct dirent *e;
  while (dp && !rc && (e = readdir(dp))) {
    size_t l = strlen(e->d_name);
    if (l <= 4 || strcmp(e->d_name + l - 4, ".ptx"))
      continue;
    if (*n == *cap) {
      int nc = *cap ? *cap * 2 : 8;
      ag_triton_kernel *nv = ag_realloc(*v, (size_t)nc * sizeof *nv);
      if (!nv) {
        rc = AG_ENOMEM;
        break;
      }
      *v = nv;
      *cap = nc;
    }
    ag_triton_kernel *k = &(*v)[*n];
    memset(k, 0, sizeof *k);
    ag_str p = AG_STR_INIT;
    ag_str_printf(&p, "%s/%s", ag_str_cstr(&kd), e->d_name);
    k->name = ag_strndup(e->d_name, l - 4);
    k->key = ag_strdup(key);
    k->ptx = p.oom ? NULL : ag_str_detach(&p);
    ag_str_release(&p);
    (*n)++;
    if (!k->name || !k->key || !k->ptx)
      rc = AG_ENOMEM;
  }
  if (dp)
    closedir(dp);
  ag_str_release(&kd);
  return rc;
}

int ag_triton_scan(const char *dump_dir, ag_triton_kernel **out, int *n) {
  *out = NULL;
  *n = 0;
  DIR *dp = opendir(dump_dir);
  if (!dp)
    return AG_ENOTFOUND;
  ag_triton_kernel *v = NULL;
  int cap = 0, rc = 0;
  struct dirent *e;
  while (!rc && (e = readdir(dp)))
    if (e->d_name[0] != '.')
      rc = scan_key(dump_dir, e->d_name, &v, n, &cap);
  closedir(dp);
  if (rc) {
    ag_triton_kernels_free(v, *n);
    *n = 0;
    return rc;
  }
  if (*n)
    qsort(v, (size_t)*n, sizeof *v, by_name_key);
  *out = v;
  return 0;
}

char *ag_triton_override_path(const char *override_dir, const char *key, const char *name,
                              const char *ext) {
  ag_str p = AG_STR_INIT;
  ag_str_printf(&p, "%s/%s/%s.%s", override_dir, key, name, ext);
  char *r = p.oom ? NULL : ag_str_detach(&p);
  ag_str_release(&p);
  return r;
}

/* A key or a kernel name Triton makes a path component of. */
static int path_component(const char *w) {
  return w && *w && !strchr(w, '/') && strcmp(w, ".") && strcmp(w, "..");
}

void ag_triton_collect_release(ag_triton_collect *c) {
  ag_spec_options_free(c->argv);
  ag_spec_options_free(c->env);
  ag_free(c->override);
  memset(c, 0, sizeof *c);
}

int ag_triton_collect_setup(const ag_spec *s, const char *run_dir, const char *variant_cubin,
                            const char *host_library, const char *python_dir,
                            ag_triton_collect *out, ag_str *why) {
  memset(out, 0, sizeof *out);
  if (!s->python || !s->triton_key || !s->python_kernel) {
    ag_str_printf(why, "the spec '%s' is not a discovered python spec (no Triton kernel key)",
                  s->path ? s->path : "?");
    return AG_EINVAL;
  }
  if (!path_component(s->triton_key) || !path_component(s->python_kernel)) {
    ag_str_printf(why, "the Triton kernel '%s' (key '%s') is not a file name Triton would "
                       "override: a name or key with '/' or a dot directory",
                  s->python_kernel, s->triton_key);
    return AG_EINVAL;
  }
  char *abs = ag_path_abs(run_dir), *data = NULL;
  size_t len = 0;
  ag_str od = AG_STR_INIT, kd = AG_STR_INIT;
  int rc = abs ? 0 : AG_ENOMEM;
  if (!rc && variant_cubin && (rc = ag_file_read(variant_cubin, &data, &len)))
    ag_str_printf(why, "cannot read the variant '%s': %s", variant_cubin, ag_strerror(rc));
  if (rc)
    goto out;
  ag_str_printf(&od, "%s/override", abs);
  ag_str_printf(&kd, "%s/%s", ag_str_cstr(&od), s->triton_key);
  if (od.oom || kd.oom ||
      (variant_cubin && !(out->override = ag_triton_override_path(
                              ag_str_cstr(&od), s->triton_key, s->python_kernel, "cubin")))) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (variant_cubin && ((rc = ag_mkdir_p(ag_str_cstr(&kd), 0755)) ||
                        (rc = ag_file_write_atomic(out->override, data, len)))) {
    ag_str_printf(why, "cannot write the override '%s': %s", out->override, ag_strerror(rc));
    goto out;
  }
  /* argv: python -m argus._triton_run SCRIPT ARGS... */
  if (!(out->argv = ag_calloc((size_t)s->npython_args + 5, sizeof *out->argv)) ||
      !(out->argv[0] = ag_strdup(ag_spec_python_exe())) || !(out->argv[1] = ag_strdup("-m")) ||
      !(out->argv[2] = ag_strdup("argus._triton_run")) ||
      !(out->argv[3] = ag_strdup(s->python))) {
    rc = AG_ENOMEM;
    goto out;
  }
  for (int i = 0; i < s->npython_args; i++)
    if (!(out->argv[i + 4] = ag_strdup(s->python_args[i]))) {
      rc = AG_ENOMEM;
      goto out;
    }
  ag_str e[8];
  int ne = 0;
  for (int i = 0; i < 8; i++)
    ag_str_init(&e[i]);
  if (variant_cubin) {
    ag_str_puts(&e[ne++], "TRITON_KERNEL_OVERRIDE=1");
    ag_str_printf(&e[ne++], "TRITON_OVERRIDE_DIR=%s", ag_str_cstr(&od));
  } else { /* Triton's own build is the variant: taken as Triton loads it */
    ag_str_puts(&e[ne++], "ARGUS_TRITON_OWN=1");
  }
  ag_str_puts(&e[ne++], "TRITON_ALWAYS_COMPILE=1");
  ag_str_printf(&e[ne++], "TRITON_CACHE_DIR=%s/triton-cache", abs);
  ag_str_printf(&e[ne++], "ARGUS_TRITON_KERNEL=%s", s->python_kernel);
  if (host_library)
    ag_str_printf(&e[ne++], "ARGUS_HOST_LIBRARY=%s", host_library);
  if (python_dir) {
    const char *old = getenv("PYTHONPATH");
    ag_str_printf(&e[ne++], "PYTHONPATH=%s%s%s", python_dir, old && *old ? ":" : "",
                  old && *old ? old : "");
  }
  if (!(out->env = ag_calloc((size_t)ne + 1, sizeof *out->env)))
    rc = AG_ENOMEM;
  for (int i = 0; i < ne; i++) {
    if (!rc && !e[i].oom)
      out->env[i] = ag_str_detach(&e[i]);
    else
      rc = AG_ENOMEM;
    ag_str_release(&e[i]);
  }
out:
  if (rc)
    ag_triton_collect_release(out);
  ag_free(abs);
  ag_free(data);
  ag_str_release(&od);
  ag_str_release(&kd);
  return rc;
}

/* "a, b, c": the distinct kernel names (they are sorted). */
static void list_names(const ag_triton_kernel *k, int n, ag_str *out) {
  for (int i = 0; i < n; i++)
    if (!i || strcmp(k[i].name, k[i - 1].name))
      ag_str_printf(out, "%s%s", out->len ? ", " : "", k[i].name);
}

/* The one kernel discovery takes, or -1 with a diagnostic saying why. */
static int choose(const ag_spec *s, const ag_triton_kernel *k, int n, ag_diags *d) {
  ag_str names = AG_STR_INIT, keys = AG_STR_INIT;
  list_names(k, n, &names);
  const char *want = s->python_kernel;
  int first = -1, count = 0;
  for (int i = 0; i < n; i++)
    if (want ? !strcmp(k[i].name, want) : !strcmp(k[i].name, k[0].name)) {
      if (first < 0)
        first = i;
      count++;
      ag_str_printf(&keys, "%s%s", keys.len ? ", " : "", k[i].key);
    }
  if (!n) {
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "the Python program '%s' compiled no Triton kernel (Triton's dump is "
                 "empty): does it launch or compile one?",
                 s->python);
    first = -1;
  } else if (first < 0) {
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "the Python program '%s' compiled no kernel '%s'; it compiled %s", s->python,
                 want, ag_str_cstr(&names));
  } else if (!want && strcmp(k[n - 1].name, k[0].name)) {
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "the Python program '%s' compiled the kernels %s: name the one to measure "
                 "with \"kernel\"",
                 s->python, ag_str_cstr(&names));
    first = -1;
  } else if (count > 1) {
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "the Python program '%s' compiled kernel '%s' %d times (specializations or "
                 "autotuning configurations; Triton's keys %s): Argus measures one module, "
                 "and cannot tell which of them is launched (docs/triton.md, \"Limits\")",
                 s->python, k[first].name, count, ag_str_cstr(&keys));
    first = -1;
  }
  ag_str_release(&names);
  ag_str_release(&keys);
  return first;
}

/* Triton's knob `name` as its env_bool reads it: "1", "true", "on". */
static int knob_on(const char *name) {
  const char *v = getenv(name);
  return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "on"));
}

static int push_opt(char ***v, int *n, const char *o) {
  char **nv = ag_realloc(*v, (size_t)(*n + 2) * sizeof *nv);
  if (!nv)
    return AG_ENOMEM;
  *v = nv;
  nv[*n] = ag_strdup(o);
  nv[*n + 1] = NULL;
  return nv[(*n)++] ? 0 : AG_ENOMEM;
}

int ag_triton_build_from_metadata(ag_spec *s, const char *json_text, ag_str *why) {
  json_error_t e;
  json_t *m = json_loads(json_text, 0, &e);
  json_t *ver = json_object_get(m, "triton_version");
  json_t *fuse = json_object_get(m, "enable_fp_fusion");
  json_t *po = json_object_get(m, "ptx_options");
  json_t *arch = json_object_get(json_object_get(m, "target"), "arch");
  const char *libdevice = NULL;
  size_t i;
  json_t *lib;
  json_array_foreach(json_object_get(m, "extern_libs"), i, lib) {
    const char *lname = json_string_value(json_array_get(lib, 0));
    if (lname && !strcmp(lname, "libdevice") && json_is_string(json_array_get(lib, 1)))
      libdevice = json_string_value(json_array_get(lib, 1));
  }
  int rc = 0;
  if (!m) {
    ag_str_printf(why, "Triton's metadata is not JSON: %s (line %d)", e.text, e.line);
    return AG_EPARSE;
  }
  if (!json_is_string(ver) || !json_is_boolean(fuse) ||
      !(json_is_null(po) || json_is_string(po)) ||
      !json_is_integer(arch) || json_integer_value(arch) < 10 || json_integer_value(arch) > 999 ||
      !libdevice) {
    ag_str_printf(why, "Triton's metadata lacks what Triton 3.6 writes (\"triton_version\", "
                       "\"enable_fp_fusion\", \"ptx_options\", \"target\": {\"arch\"}, "
                       "the libdevice of \"extern_libs\")");
    json_decref(m);
    return AG_EPARSE;
  }
  int sm = (int)json_integer_value(arch);
  /* make_cubin: ptxas_blackwell from sm_100 on; the knob's path when it
   * runs, else the backend's own bin/ (libdevice is <backend>/lib/...) */
  const char *tool = sm >= 100 ? "ptxas-blackwell" : "ptxas";
  const char *env = getenv(sm >= 100 ? "TRITON_PTXAS_BLACKWELL_PATH" : "TRITON_PTXAS_PATH");
  ag_str p = AG_STR_INIT;
  if (env && *env && access(env, X_OK) == 0) {
    ag_str_puts(&p, env);
  } else {
    const char *slash = strrchr(libdevice, '/');
    size_t dl = slash ? (size_t)(slash - libdevice) : 0; /* <backend>/lib */
    while (dl > 0 && libdevice[dl - 1] == '/')
      dl--;
    while (dl > 0 && libdevice[dl - 1] != '/')
      dl--; /* <backend>/ */
    if (dl > 1)
      ag_str_printf(&p, "%.*sbin/%s", (int)dl, libdevice, tool);
  }
  char **opts = NULL;
  int n = 0;
  if (!p.len) {
    ag_str_printf(why, "cannot tell where Triton's %s is from the libdevice path '%s'", tool,
                  libdevice);
    rc = AG_EPARSE;
  }
  if (!rc) { /* the options, in make_cubin's order */
    if (knob_on("TRITON_DISABLE_LINE_INFO"))
      rc = push_opt(&opts, &n, "-lineinfo") || push_opt(&opts, &n, "-suppress-debug-info");
    else if (knob_on("DISABLE_PTXAS_OPT"))
      rc = push_opt(&opts, &n, "-g");
    else
      rc = push_opt(&opts, &n, "-lineinfo");
    if (!rc && !json_is_true(fuse))
      rc = push_opt(&opts, &n, "--fmad=false");
    if (!rc && knob_on("DISABLE_PTXAS_OPT"))
      rc = push_opt(&opts, &n, "--opt-level") || push_opt(&opts, &n, "0");
    for (const char *w = json_string_value(po); !rc && w && *w;) { /* split(" ") */
      size_t l = strcspn(w, " ");
      char word[256];
      if (l >= sizeof word) {
        ag_str_printf(why, "a ptxas option in Triton's ptx_options is longer than 255 bytes");
        rc = AG_EPARSE;
        break;
      }
      memcpy(word, w, l);
      word[l] = 0;
      if (l)
        rc = push_opt(&opts, &n, word);
      w += l + (w[l] == ' ');
    }
    char gpu[32];
    snprintf(gpu, sizeof gpu, "--gpu-name=sm_%d%s", sm, sm >= 90 ? "a" : "");
    if (!rc)
      rc = push_opt(&opts, &n, gpu);
  }
  if (!rc && (!(s->triton_version = ag_strdup(json_string_value(ver))) ||
              !(s->triton_ptxas = ag_str_detach(&p))))
    rc = AG_ENOMEM;
  if (rc) {
    ag_free(s->triton_version);
    s->triton_version = NULL;
    ag_spec_options_free(opts);
  } else {
    s->triton_ptxas_opts = opts;
  }
  ag_str_release(&p);
  json_decref(m);
  return rc;
}

/* Triton's metadata of kernel `name` in the private cache: its
 * <hash>/<name>.json. One is the kernel's; none (a stand-in for Triton) or
 * several (the same source compiled with other options, e.g. num_warps:
 * one dump key, several cache entries) leave the build unknown, said in
 * s->triton_build_note (several: an error, Argus cannot tell which runs). */
static int read_metadata(ag_spec *s, const char *cache, const char *name, ag_diags *d) {
  DIR *dp = opendir(cache);
  ag_str found = AG_STR_INIT, why = AG_STR_INIT;
  int count = 0, rc = 0;
  struct dirent *e;
  while (dp && (e = readdir(dp))) {
    if (e->d_name[0] == '.')
      continue;
    ag_str p = AG_STR_INIT;
    ag_str_printf(&p, "%s/%s/%s.json", cache, e->d_name, name);
    if (!p.oom && access(ag_str_cstr(&p), R_OK) == 0) {
      count++;
      ag_str_release(&found);
      ag_str_puts(&found, ag_str_cstr(&p));
    }
    ag_str_release(&p);
  }
  if (dp)
    closedir(dp);
  char *text = NULL;
  size_t len;
  if (count > 1) {
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "the Python program '%s' compiled kernel '%s' %d times from the same source "
                 "with different options (num_warps, num_stages, ...; Triton's cache holds "
                 "%d builds): Argus measures one module, and cannot tell which of them is "
                 "launched (docs/triton.md, \"Limits\")",
                 s->python, name, count, count);
    rc = AG_ENOTFOUND;
  } else if (count == 0) {
    ag_str_printf(&why, "Triton's metadata of '%s' was not found in its cache: the variants "
                        "are assembled by Argus's ptxas with nvcc's options for PTX, not as "
                        "Triton assembles them", name);
  } else if ((rc = ag_file_read(ag_str_cstr(&found), &text, &len)) ||
             (rc = ag_triton_build_from_metadata(s, text, &why))) {
    if (rc == AG_ENOMEM)
      goto out;
    ag_str w2 = AG_STR_INIT;
    ag_str_printf(&w2, "Triton's metadata '%s': %s: the variants are assembled by Argus's "
                       "ptxas with nvcc's options for PTX, not as Triton assembles them",
                  ag_str_cstr(&found), why.len ? ag_str_cstr(&why) : ag_strerror(rc));
    ag_str_release(&why);
    why = w2;
    rc = 0;
  }
  if (!rc && why.len && !(s->triton_build_note = ag_str_detach(&why)))
    rc = AG_ENOMEM;
out:
  ag_free(text);
  ag_str_release(&found);
  ag_str_release(&why);
  return rc;
}

/* Copies `from` into a new temporary file named by tmpl (mkstemps with a
 * suffix of `suffix` bytes); AG_* with a diagnostic. */
static int copy_temp(const ag_spec *s, const char *from, char *tmpl, int suffix, const char *what,
                     ag_diags *d) {
  char *text = NULL;
  size_t len = 0;
  int rc = ag_file_read(from, &text, &len), fd = -1;
  if (!rc) {
    fd = mkstemps(tmpl, suffix);
    if (fd < 0 || close(fd) != 0)
      rc = AG_EIO;
    else
      rc = ag_file_write_atomic(tmpl, text, len);
    if (rc && fd >= 0)
      unlink(tmpl);
  }
  if (rc)
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0, "cannot copy %s '%s': %s", what, from,
                 rc == AG_EIO ? strerror(errno) : ag_strerror(rc));
  ag_free(text);
  return rc;
}

int ag_spec_python_discover(ag_spec *s, ag_diags *d) {
  if (!s->python || s->ptx)
    return 0;
  char dir[] = "/tmp/argus-triton-dump-XXXXXX", tmpl[] = "/tmp/argus-triton-XXXXXX.ptx",
       ctmpl[] = "/tmp/argus-triton-XXXXXX.cubin";
  if (!mkdtemp(dir)) {
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "cannot make a directory for Triton's dump: %s", strerror(errno));
    return AG_EIO;
  }
  ag_triton_kernel *k = NULL;
  ag_str dump = AG_STR_INIT, cache = AG_STR_INIT, cub = AG_STR_INIT;
  int n = 0, have_ptx = 0;
  /* the dump and a private cache (the metadata; nothing lands in the user's) */
  ag_str_printf(&dump, "%s/dump", dir);
  ag_str_printf(&cache, "%s/cache", dir);
  int rc = dump.oom || cache.oom ? AG_ENOMEM : 0;
  if (!rc && (rc = ag_mkdir_p(ag_str_cstr(&dump), 0700))) /* a script may compile nothing */
    ag_diags_add(d, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                 "cannot make a directory for Triton's dump: %s", ag_strerror(rc));
  if (!rc)
    rc = ag_triton_dump(s, ag_str_cstr(&dump), ag_str_cstr(&cache), DISCOVER_TIMEOUT_S, d);
  if (rc)
    goto out;
  if ((rc = ag_triton_scan(ag_str_cstr(&dump), &k, &n)))
    goto out;
  int i = choose(s, k, n, d);
  if (i < 0) {
    rc = AG_ENOTFOUND;
    goto out;
  }
  if ((rc = read_metadata(s, ag_str_cstr(&cache), k[i].name, d)))
    goto out;
  if ((rc = copy_temp(s, k[i].ptx, tmpl, 4, "the PTX of", d)))
    goto out;
  have_ptx = 1;
  if (!(s->ptx = ag_strdup(tmpl))) {
    rc = AG_ENOMEM;
    goto out;
  }
  s->ptx_is_temp = 1; /* the spec removes it now */
  have_ptx = 0;
  /* Triton's cubin: the build the user ships, the trace-free variant's peer */
  ag_str_printf(&cub, "%s/%s/%s.cubin", ag_str_cstr(&dump), k[i].key, k[i].name);
  if (cub.oom) {
    rc = AG_ENOMEM;
    goto out;
  }
  if (access(ag_str_cstr(&cub), R_OK) == 0 && !s->production) {
    if ((rc = copy_temp(s, ag_str_cstr(&cub), ctmpl, 6, "Triton's cubin", d)))
      goto out;
    if (!(s->production = ag_strdup(ctmpl))) {
      unlink(ctmpl);
      rc = AG_ENOMEM;
      goto out;
    }
    s->production_is_temp = 1;
  }
  ag_free(s->python_kernel);
  s->python_kernel = ag_strdup(k[i].name);
  s->triton_key = ag_strdup(k[i].key);
  if (!s->python_kernel || !s->triton_key)
    rc = AG_ENOMEM;
out:
  if (rc && have_ptx)
    unlink(tmpl);
  ag_str_release(&dump);
  ag_str_release(&cache);
  ag_str_release(&cub);
  ag_triton_kernels_free(k, n);
  ag_remove_tree(dir);
  return rc;
}
