/*
 * spec.c — loading program specs (argus/spec.h) and compiling their CUDA
 * sources to PTX with nvcc.
 *
 * jansson does not keep positions of values, so diagnostics about a key or
 * a value locate it with core's position scanner over the spec text
 * (ag_json_diag). Specs are tiny and read once per command.
 */
#include "argus/spec.h"
#include "ptxcache.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef ARGUS_INCLUDE_DIR
#define ARGUS_INCLUDE_DIR "include"
#endif

/* ------------------------------------------------------------- loading */

static char *resolve_path(const char *dir, const char *p) {
  if (p[0] == '/' || !dir || !*dir)
    return ag_strdup(p);
  size_t n = strlen(dir) + strlen(p) + 2;
  char *r = ag_malloc(n);
  if (r)
    snprintf(r, n, "%s/%s", dir, p);
  return r;
}

/* "run"'s argv[0] and "run_library": a path with '/' is relative to the
 * spec; a bare name stays as is and is looked up in PATH when a collection
 * uses it. */
static char *resolve_lib(const char *dir, const char *p) {
  return strchr(p, '/') ? resolve_path(dir, p) : ag_strdup(p);
}

/* The file `value` (the value of `key`) names, relative to the spec's
 * directory, resolved to an absolute path in *out (owned): a program runs in
 * the spec's directory, so the path must not depend on ours. A file that
 * cannot be resolved is a diagnostic (`what` names it) and *out stays NULL;
 * AG_ENOMEM only for memory. */
static int real_file(const char *text, const char *path, ag_diags *diags, const char *dir,
                     const char *key, const char *value, const char *what, char **out) {
  const char *pk[] = {key};
  char *rel = resolve_path(dir, value);
  if (!rel)
    return AG_ENOMEM;
  char *real = realpath(rel, NULL);
  if (!real)
    ag_json_diag(diags, text, path, pk, 1, 1, "cannot read the %s '%s': %s", what, rel,
             strerror(errno));
  ag_free(rel);
  if (!real)
    return 0;
  *out = ag_strdup(real);
  free(real);
  return *out ? 0 : AG_ENOMEM;
}

/* ------------------------------------------------------------ tile specs */

static ag_spec_tile_fn tile_builder;
static void *tile_builder_ud;

void ag_spec_set_tile_builder(ag_spec_tile_fn fn, void *ud) {
  tile_builder = fn;
  tile_builder_ud = ud;
}

static int is_tile_key(const char *k) {
  return !strcmp(k, "tile") || !strcmp(k, "kernel") || !strcmp(k, "size") ||
         !strcmp(k, "unchecked");
}

/* {"tile": FILE, "kernel": NAME, "size": {NAME: V, ...}, "unchecked": BOOL,
 * "name": NAME}: the fields of s; the tile builder does the rest. Errors are
 * diagnostics (the caller counts them); AG_ENOMEM only for memory. */
static int load_tile(json_t *j, const char *text, const char *path, ag_diags *diags,
                     ag_spec *s) {
  static const char *const other[] = {"module", "run", "run_library", "args"};
  for (int i = 0; i < 4; i++)
    if (json_object_get(j, other[i])) {
      const char *p1[] = {other[i]};
      ag_json_diag(diags, text, path, p1, 1, 0,
               "a tile spec has no \"%s\": argus lowers the program and runs it itself "
               "(argus run)",
               other[i]);
    }
  json_t *t = json_object_get(j, "tile"), *k = json_object_get(j, "kernel"),
         *sz = json_object_get(j, "size"), *u = json_object_get(j, "unchecked"),
         *name = json_object_get(j, "name");
  const char *pt[] = {"tile"}, *pk[] = {"kernel"}, *ps[] = {"size", NULL},
             *pu[] = {"unchecked"}, *pn[] = {"name"};
  if (!json_is_string(t) || !*json_string_value(t)) {
    ag_json_diag(diags, text, path, pt, 1, 1,
             "\"tile\" must be a file name (string): the .tile program");
  } else {
    int rc = real_file(text, path, diags, s->dir, "tile", json_string_value(t), "tile program",
                       &s->tile);
    if (rc || !s->tile)
      return rc;
  }
  if (k && (!json_is_string(k) || !*json_string_value(k)))
    ag_json_diag(diags, text, path, pk, 1, 1, "\"kernel\" must be a kernel name (string)");
  else if (k && !(s->tile_kernel = ag_strdup(json_string_value(k))))
    return AG_ENOMEM;
  if (u && !json_is_boolean(u))
    ag_json_diag(diags, text, path, pu, 1, 1, "\"unchecked\" must be true or false");
  s->tile_unchecked = json_is_true(u);
  if (name && (!json_is_string(name) || !*json_string_value(name)))
    ag_json_diag(diags, text, path, pn, 1, 1, "\"name\" must be a non-empty string");
  if (!sz) {
    ag_json_diag(diags, text, path, NULL, 0, 0,
             "tile spec has no \"size\": give every problem size of the kernel, "
             "{\"size\": {\"M\": 128, ...}}");
  } else if (!json_is_object(sz)) {
    ag_json_diag(diags, text, path, ps, 1, 1,
             "\"size\" must be an object of sizes: {\"M\": 128, \"N\": 128}");
  } else {
    ag_str a = AG_STR_INIT;
    const char *key;
    json_t *v;
    json_object_foreach(sz, key, v) {
      ps[1] = key;
      if (!json_is_integer(v) || json_integer_value(v) < 1 ||
          json_integer_value(v) > 0xffffffffLL)
        ag_json_diag(diags, text, path, ps, 2, 1,
                 "size '%s' must be a positive integer below 2^32", key);
      else
        ag_str_printf(&a, "%s%s=%lld", a.len ? "," : "", key,
                      (long long)json_integer_value(v));
    }
    if (a.oom) {
      ag_str_release(&a);
      return AG_ENOMEM;
    }
    s->tile_sizes = a.len ? ag_str_detach(&a) : ag_strdup("");
    ag_str_release(&a);
    if (!s->tile_sizes)
      return AG_ENOMEM;
  }
  const char *nm = json_is_string(name) && *json_string_value(name) ? json_string_value(name)
                   : s->tile_kernel                                 ? s->tile_kernel
                                                                    : NULL;
  if (nm) {
    s->name = ag_strdup(nm);
  } else if (s->tile) { /* the file's name without .tile */
    const char *b = strrchr(s->tile, '/');
    b = b ? b + 1 : s->tile;
    size_t n = strlen(b);
    s->name = ag_strndup(b, n > 5 && !strcmp(b + n - 5, ".tile") ? n - 5 : n);
  } else {
    s->name = ag_strdup("tile");
  }
  return s->name ? 0 : AG_ENOMEM;
}

/* ---------------------------------------------------------- python specs */

static int is_python_key(const char *k) { return !strcmp(k, "python") || !strcmp(k, "args"); }

static int valid_ident(const char *w) {
  if (!(isalpha((unsigned char)*w) || *w == '_'))
    return 0;
  while (*++w)
    if (!(isalnum((unsigned char)*w) || *w == '_'))
      return 0;
  return 1;
}

/* The file name of `path` without `ext`, owned. */
static char *stem(const char *path, const char *ext) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  size_t n = strlen(b), e = strlen(ext);
  return ag_strndup(b, n > e && !strcmp(b + n - e, ext) ? n - e : n);
}

/* {"python": FILE, "args": [...], "kernel": NAME, "name": NAME}: a Python
 * program running Triton kernels (docs/triton.md). Its module comes from
 * discovery (ag_spec_python_discover). Errors are diagnostics (the caller
 * counts them); AG_ENOMEM only for memory. */
static int load_python(json_t *j, const char *text, const char *path, ag_diags *diags,
                       ag_spec *s) {
  static const char *const other[] = {"module", "run", "run_library", "tile", "size",
                                      "unchecked"};
  for (int i = 0; i < 6; i++)
    if (json_object_get(j, other[i])) {
      const char *p1[] = {other[i]};
      if (i < 3)
        ag_json_diag(diags, text, path, p1, 1, 0,
                 "a python spec has no \"%s\": Argus takes the module from Triton and runs "
                 "the script itself (docs/triton.md)",
                 other[i]);
      else
        ag_json_diag(diags, text, path, p1, 1, 0,
                 "\"%s\" belongs to a tile spec, not to a python spec", other[i]);
    }
  json_t *py = json_object_get(j, "python"), *args = json_object_get(j, "args"),
         *k = json_object_get(j, "kernel"), *name = json_object_get(j, "name");
  const char *pp[] = {"python"}, *pa[] = {"args"}, *pk[] = {"kernel"}, *pn[] = {"name"};
  if (!json_is_string(py) || !*json_string_value(py)) {
    ag_json_diag(diags, text, path, pp, 1, 1,
             "\"python\" must be a file name (string): the Python script to run");
  } else if (real_file(text, path, diags, s->dir, "python", json_string_value(py),
                       "Python script", &s->python)) {
    return AG_ENOMEM;
  }
  if (args && (!json_is_array(args) || !ag_json_all_strings(args, 0)))
    ag_json_diag(diags, text, path, pa, 1, 1,
             "\"args\" must be an array of strings (the script's arguments)");
  else if (args ? ag_json_strv(args, &s->python_args, &s->npython_args) != 0
                : !(s->python_args = ag_calloc(1, sizeof *s->python_args)))
    return AG_ENOMEM;
  if (k && (!json_is_string(k) || !valid_ident(json_string_value(k))))
    ag_json_diag(diags, text, path, pk, 1, 1,
             "\"kernel\" must be a kernel name (the @triton.jit function's)");
  else if (k && !(s->python_kernel = ag_strdup(json_string_value(k))))
    return AG_ENOMEM;
  if (name && (!json_is_string(name) || !*json_string_value(name)))
    ag_json_diag(diags, text, path, pn, 1, 1, "\"name\" must be a non-empty string");
  if (json_is_string(name) && *json_string_value(name))
    s->name = ag_strdup(json_string_value(name));
  else if (s->python_kernel)
    s->name = ag_strdup(s->python_kernel);
  else
    s->name = s->python ? stem(s->python, ".py") : ag_strdup("python");
  return s->name ? 0 : AG_ENOMEM;
}

int ag_spec_load_str(const char *text, const char *path, ag_diags *diags, ag_spec **out) {
  *out = NULL;
  json_t *j = NULL;
  int rc = ag_json_load_str(text, path, diags, &j);
  if (rc)
    return rc;
  ag_spec *s = ag_calloc(1, sizeof *s);
  if (!s) {
    json_decref(j);
    return AG_ENOMEM;
  }
  int before = diags->nerrors;
  rc = AG_ENOMEM;
  if (!(s->path = ag_strdup(path ? path : "spec.json")))
    goto out;
  {
    char *slash = strrchr(s->path, '/');
    s->dir = slash ? ag_strndup(s->path, (size_t)(slash - s->path)) : ag_strdup(".");
    if (!s->dir)
      goto out;
  }
  if (!json_is_object(j)) {
    ag_json_diag(diags, text, path, NULL, 0, 0,
             "a program spec is a JSON object with \"name\", \"module\" and \"run\"");
    goto invalid;
  }
  const char *key;
  json_t *v;
  json_object_foreach(j, key, v) {
    const char *p1[] = {key};
    if (strcmp(key, "name") && strcmp(key, "module") && strcmp(key, "run") &&
        strcmp(key, "run_library") && !is_tile_key(key) && !is_python_key(key))
      ag_json_diag(diags, text, path, p1, 1, 0,
               "unknown key '%s' in program spec (expected name, module, run, run_library; "
               "or tile, kernel, size, unchecked; or python, args, kernel)",
               key);
  }
  if (json_object_get(j, "python")) {
    rc = load_python(j, text, path, diags, s);
    if (rc)
      goto out;
    goto invalid;
  }
  if (json_object_get(j, "tile")) {
    rc = load_tile(j, text, path, diags, s);
    if (rc)
      goto out;
    goto invalid;
  }
  json_object_foreach(j, key, v) {
    const char *p1[] = {key};
    if (is_tile_key(key))
      ag_json_diag(diags, text, path, p1, 1, 0, "\"%s\" belongs to a tile spec: it needs \"tile\"",
               key);
    else if (is_python_key(key))
      ag_json_diag(diags, text, path, p1, 1, 0,
               "\"%s\" belongs to a python spec: it needs \"python\"", key);
  }
  json_t *name = json_object_get(j, "name");
  if (!name) {
    ag_json_diag(diags, text, path, NULL, 0, 0, "program spec has no \"name\"");
  } else if (!json_is_string(name) || !*json_string_value(name)) {
    const char *p1[] = {"name"};
    ag_json_diag(diags, text, path, p1, 1, 1, "\"name\" must be a non-empty string");
  } else if (!(s->name = ag_strdup(json_string_value(name)))) {
    goto out;
  }
  json_t *mod = json_object_get(j, "module");
  const char *pm[] = {"module", NULL};
  if (!mod) {
    ag_json_diag(diags, text, path, NULL, 0, 0,
             "program spec has no \"module\" ({\"cuda\": FILE, \"flags\": [...]} or "
             "{\"ptx\": FILE})");
  } else if (!json_is_object(mod)) {
    ag_json_diag(diags, text, path, pm, 1, 1,
             "\"module\" must be an object: {\"cuda\": FILE, \"flags\": [...]} or "
             "{\"ptx\": FILE}");
  } else {
    json_object_foreach(mod, key, v) {
      pm[1] = key;
      if (strcmp(key, "cuda") && strcmp(key, "ptx") && strcmp(key, "flags") &&
          strcmp(key, "production"))
        ag_json_diag(diags, text, path, pm, 2, 0,
                 "unknown key '%s' in \"module\" (expected cuda, ptx, flags, production)",
                 key);
    }
    json_t *cu = json_object_get(mod, "cuda"), *px = json_object_get(mod, "ptx"),
           *fl = json_object_get(mod, "flags"), *pr = json_object_get(mod, "production");
    if (cu && px) {
      pm[1] = "ptx";
      ag_json_diag(diags, text, path, pm, 2, 0, "\"module\" has both \"cuda\" and \"ptx\": give one");
    } else if (!cu && !px) {
      ag_json_diag(diags, text, path, pm, 1, 1, "\"module\" needs \"cuda\" or \"ptx\"");
    }
    if (cu) {
      pm[1] = "cuda";
      if (!json_is_string(cu))
        ag_json_diag(diags, text, path, pm, 2, 1, "\"cuda\" must be a file name (string)");
      else if (!(s->cuda = resolve_path(s->dir, json_string_value(cu))))
        goto out;
    }
    if (px) {
      pm[1] = "ptx";
      if (!json_is_string(px))
        ag_json_diag(diags, text, path, pm, 2, 1, "\"ptx\" must be a file name (string)");
      else if (!(s->ptx = resolve_path(s->dir, json_string_value(px))))
        goto out;
    }
    if (pr) {
      pm[1] = "production";
      if (!json_is_string(pr) || !*json_string_value(pr))
        ag_json_diag(diags, text, path, pm, 2, 1,
                 "\"production\" must be a file name (string): the cubin or fatbin of the "
                 "user's own build");
      else if (!(s->production = resolve_path(s->dir, json_string_value(pr))))
        goto out;
    }
    if (fl) {
      pm[1] = "flags";
      if (!json_is_array(fl) || !ag_json_all_strings(fl, 0))
        ag_json_diag(diags, text, path, pm, 2, 1, "\"flags\" must be an array of strings");
      else if (!cu)
        ag_json_diag(diags, text, path, pm, 2, 0, "\"flags\" apply to a \"cuda\" module only");
      else if (ag_json_strv(fl, &s->flags, &s->nflags))
        goto out;
    }
  }
  json_t *run = json_object_get(j, "run");
  if (run) {
    const char *pr[] = {"run"};
    if (!json_is_array(run) || !json_array_size(run) || !ag_json_all_strings(run, 0))
      ag_json_diag(diags, text, path, pr, 1, 1,
               "\"run\" must be a non-empty array of strings (the harness argv)");
    else if (ag_json_strv(run, &s->run, &s->nrun))
      goto out;
    else if (strchr(s->run[0], '/')) { /* a path: the spec's, like "module" */
      char *h = resolve_lib(s->dir, s->run[0]);
      if (!h)
        goto out;
      ag_free(s->run[0]);
      s->run[0] = h;
    }
  }
  json_t *lib = json_object_get(j, "run_library");
  if (lib) {
    const char *pl[] = {"run_library"};
    if (!json_is_string(lib) || !*json_string_value(lib))
      ag_json_diag(diags, text, path, pl, 1, 1,
               "\"run_library\" must be a file name (string): the harness built as a shared "
               "library exporting argus_harness_main");
    else if (!run)
      ag_json_diag(diags, text, path, pl, 1, 0,
               "\"run_library\" needs \"run\" (the argv it is called with)");
    else if (!(s->run_library = resolve_lib(s->dir, json_string_value(lib))))
      goto out;
  }
invalid:
  rc = diags->nerrors > before ? AG_EPARSE : 0;
  if (!rc && s->tile) {
    if (!tile_builder) {
      ag_diags_add(diags, AG_SEV_ERROR, s->path, 0, 0, NULL, 0,
                   "program spec '%s' names a tile program, and this program cannot lower "
                   "one (use argus, or register ag_tile_spec_build)",
                   s->path);
      rc = AG_EUNSUPPORTED;
    } else {
      rc = tile_builder(s, tile_builder_ud, diags);
    }
  }
out:
  json_decref(j);
  if (rc) {
    ag_spec_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

int ag_spec_load(const char *path, ag_diags *diags, ag_spec **out) {
  char *text;
  size_t len;
  *out = NULL;
  int rc = ag_file_read(path, &text, &len);
  if (rc) {
    ag_diags_add(diags, AG_SEV_ERROR, path, 0, 0, NULL, 0, "cannot read program spec: %s",
                 ag_strerror(rc));
    return rc;
  }
  rc = ag_spec_load_str(text, path, diags, out);
  ag_free(text);
  return rc;
}

/* Frees n words, some of which may have been taken (set to NULL). */
static void free_words(char **v, int n) {
  for (int i = 0; v && i < n; i++)
    ag_free(v[i]);
  ag_free(v);
}

void ag_spec_free(ag_spec *s) {
  if (!s)
    return;
  ag_free(s->path);
  ag_free(s->dir);
  ag_free(s->name);
  ag_free(s->run_library);
  ag_free(s->cuda);
  if (s->ptx_is_temp && s->ptx)
    unlink(s->ptx);
  ag_free(s->ptx);
  ag_free(s->tile);
  ag_free(s->tile_kernel);
  ag_free(s->tile_sizes);
  if (s->production_is_temp && s->production)
    unlink(s->production);
  ag_free(s->production);
  ag_free(s->triton_version);
  ag_free(s->triton_ptxas);
  ag_strv_free(s->triton_ptxas_opts);
  ag_free(s->triton_build_note);
  ag_free(s->python);
  ag_free(s->python_kernel);
  ag_free(s->triton_key);
  ag_strv_free(s->python_args);
  ag_strv_free(s->flags);
  ag_strv_free(s->run);
  ag_free(s);
}

/* ------------------------------------------------------------- nvcc */

char *ag_spec_nvcc(void) {
  const char *e = getenv("ARGUS_NVCC");
  if (e && *e)
    return access(e, X_OK) == 0 ? ag_strdup(e) : NULL;
  char *w = ag_which("nvcc");
  if (w)
    return w;
  return access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? ag_strdup("/usr/local/cuda/bin/nvcc")
                                                      : NULL;
}

int ag_spec_compile_ptx(const char *cu, const char *const *flags, ag_diags *diags,
                        ag_str *ptx) {
  return ag_spec_compile_ptx_ex(cu, flags, diags, ptx, NULL);
}

/* nvcc and the spec's flags (NULL: nvcc's -arch=sm_90a) with their count,
 * or NULL with a diagnostic saying what could not be done (`what`). The
 * returned path is owned. */
static const char *const default_flags[] = {"-arch=sm_90a", NULL};
static char *nvcc_and_flags(const char *cu, const char *what, const char *const **flags,
                            int *nfl, ag_diags *diags) {
  char *nvcc = ag_spec_nvcc();
  if (!nvcc) {
    ag_diags_add(diags, AG_SEV_ERROR, cu, 0, 0, NULL, 0,
                 "%s: no nvcc found (set ARGUS_NVCC or put nvcc in PATH)", what);
    return NULL;
  }
  if (!*flags)
    *flags = default_flags;
  for (*nfl = 0; (*flags)[*nfl]; (*nfl)++)
    ;
  return nvcc;
}

static int compile_ptx(const char *cu, const char *const *flags, int markers, ag_diags *diags,
                       ag_str *ptx, int *cached);

int ag_spec_compile_ptx_ex(const char *cu, const char *const *flags, ag_diags *diags,
                           ag_str *ptx, int *cached) {
  return compile_ptx(cu, flags, 1, diags, ptx, cached);
}

int ag_spec_compile_user_ptx(const char *cu, const char *const *flags, ag_diags *diags,
                             ag_str *ptx) {
  return compile_ptx(cu, flags, 0, diags, ptx, NULL);
}

static int compile_ptx(const char *cu, const char *const *flags, int markers, ag_diags *diags,
                       ag_str *ptx, int *cached) {
  if (cached)
    *cached = 0;
  int nfl;
  char *nvcc = nvcc_and_flags(cu, "cannot compile", &flags, &nfl, diags);
  if (!nvcc)
    return AG_ENOTFOUND;
  char tmpl[] = "/tmp/argus-ptx-XXXXXX.ptx";
  char dep[sizeof tmpl + 2] = "";
  int fd = -1;
  const char **argv = ag_calloc((size_t)nfl + 14, sizeof *argv);
  ag_str err = AG_STR_INIT, inc = AG_STR_INIT;
  char *cdir = ag__ptxc_dir(), key[65] = "";
  int rc = 0;
  /* argus/region.cuh: the installed headers beside this program or library
   * (<prefix>/include, docs/api.md), else the source tree it was built in */
  char *inst = ag_install_path("include/argus/region.cuh");
  if (inst)
    inst[strlen(inst) - strlen("/argus/region.cuh")] = 0;
  ag_str_printf(&inc, "-I%s", inst ? inst : ARGUS_INCLUDE_DIR);
  ag_free(inst);
  if (!argv || inc.oom) {
    rc = AG_ENOMEM;
    goto out;
  }
  /* what names the compilation (the key), then the output options */
  int a = 0;
  argv[a++] = nvcc;
  argv[a++] = "-ptx";
  for (int i = 0; i < nfl; i++)
    argv[a++] = flags[i];
  if (markers)
    argv[a++] = "-DARGUS_MARKERS=1"; /* region.cuh markers are on under Argus */
  argv[a++] = ag_str_cstr(&inc);
  argv[a] = NULL;
  if (cdir && ag__ptxc_key(nvcc, cu, argv + 1, key) == 0 && ag__ptxc_lookup(cdir, key, ptx)) {
    if (cached)
      *cached = 1;
    AG_LOG(AG_LOG_DEBUG, "PTX of %s from the cache (%s)", cu, cdir);
    goto out;
  }
  struct timespec t0;
  clock_gettime(CLOCK_REALTIME, &t0);
  long long started = (long long)t0.tv_sec * 1000000000LL + t0.tv_nsec;
  fd = mkstemps(tmpl, 4);
  if (fd < 0) {
    rc = AG_EIO;
    goto out;
  }
  close(fd);
  if (key[0]) { /* nvcc lists the files it read, for the cache */
    snprintf(dep, sizeof dep, "%.*s.d", (int)(sizeof tmpl - 5), tmpl);
    argv[a++] = "-MD";
    argv[a++] = "-MF";
    argv[a++] = dep;
  }
  argv[a++] = "-o";
  argv[a++] = tmpl;
  argv[a++] = cu;
  argv[a] = NULL;
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.capture_err = &err;
  o.timeout_s = 300;
  ag_proc_result res;
  rc = ag_proc_run(&o, &res);
  if (rc) {
    ag_diags_add(diags, AG_SEV_ERROR, cu, 0, 0, NULL, 0, "cannot run %s: %s", nvcc,
                 ag_strerror(rc));
    goto out;
  }
  if (!res.exited || res.exit_code) {
    ag_str how = AG_STR_INIT;
    ag_proc_describe(&res, &how);
    ag_diags_add(diags, AG_SEV_ERROR, cu, 0, 0, NULL, 0, "nvcc failed (%s):\n%s",
                 ag_str_cstr(&how), ag_str_cstr(&err));
    ag_str_release(&how);
    rc = AG_ECHILD;
    goto out;
  }
  char *data;
  size_t len;
  if ((rc = ag_file_read(tmpl, &data, &len)))
    goto out;
  ag_str_append(ptx, data, len);
  if (key[0] && !ptx->oom) {
    int src = ag__ptxc_store(cdir, key, cu, argv + 1, started, dep, data, len);
    if (src)
      AG_LOG(AG_LOG_DEBUG, "PTX of %s not cached in %s: %s", cu, cdir, ag_strerror(src));
  }
  ag_free(data);
  rc = ptx->oom ? AG_ENOMEM : 0;
out:
  if (fd >= 0)
    unlink(tmpl);
  if (dep[0])
    unlink(dep);
  ag_free(argv);
  ag_free(nvcc);
  ag_free(cdir);
  ag_str_release(&err);
  ag_str_release(&inc);
  return rc;
}

/* ------------------------------------------- what nvcc passes to ptxas */

/* Splits one line of `nvcc -dryrun` ("#$ ptxas -arch=sm_90a -m64 "x.ptx" -o
 * "x.cubin"") into words, unquoting. */
static int split_words(const char *line, char ***out, int *n) {
  *out = NULL;
  *n = 0;
  char **v = NULL;
  int cap = 0, rc = 0;
  for (const char *p = line; *p;) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p)
      break;
    ag_str w = AG_STR_INIT;
    while (*p && *p != ' ' && *p != '\t') {
      if (*p == '"') {
        for (p++; *p && *p != '"'; p++)
          ag_str_putc(&w, *p == '\\' && p[1] ? *++p : *p);
        if (*p)
          p++;
      } else {
        ag_str_putc(&w, *p++);
      }
    }
    if (*n + 2 > cap) {
      cap = cap ? cap * 2 : 16;
      char **nv = ag_realloc(v, (size_t)cap * sizeof *nv);
      if (!nv) {
        ag_str_release(&w);
        rc = AG_ENOMEM;
        break;
      }
      v = nv;
    }
    if (w.oom || !(v[*n] = ag_str_detach(&w))) {
      rc = AG_ENOMEM;
      break;
    }
    v[++*n] = NULL;
  }
  if (rc) {
    ag_strv_free(v);
    *n = 0;
    return rc;
  }
  *out = v;
  return 0;
}

int ag_spec_ptxas_options(const char *cu, const char *const *flags, const char *arch,
                          ag_diags *diags, char ***out) {
  *out = NULL;
  int nfl;
  char *nvcc = nvcc_and_flags(cu, "cannot tell how nvcc compiles it", &flags, &nfl, diags);
  if (!nvcc)
    return AG_ENOTFOUND;
  const char **argv = ag_calloc((size_t)nfl + 8, sizeof *argv);
  ag_str so = AG_STR_INIT, se = AG_STR_INIT;
  char **words = NULL, **opts = NULL;
  int n = 0; /* words in `words` */
  int rc = 0, found = 0, nlines = 0;
  if (!argv) {
    rc = AG_ENOMEM;
    goto out;
  }
  /* the same command as the user's build of a cubin, printed, not run */
  int a = 0;
  argv[a++] = nvcc;
  argv[a++] = "-dryrun";
  argv[a++] = "-cubin";
  for (int i = 0; i < nfl; i++)
    argv[a++] = flags[i];
  argv[a++] = "-o";
  argv[a++] = "argus-dryrun.cubin";
  argv[a++] = cu;
  argv[a] = NULL;
  ag_proc_opts o;
  memset(&o, 0, sizeof o);
  o.argv = argv;
  o.capture_out = &so;
  o.capture_err = &se;
  o.timeout_s = 120;
  ag_proc_result res;
  if ((rc = ag_proc_run(&o, &res))) {
    ag_diags_add(diags, AG_SEV_ERROR, cu, 0, 0, NULL, 0, "cannot run %s: %s", nvcc,
                 ag_strerror(rc));
    goto out;
  }
  if (!res.exited || res.exit_code) {
    ag_str how = AG_STR_INIT;
    ag_proc_describe(&res, &how);
    ag_diags_add(diags, AG_SEV_ERROR, cu, 0, 0, NULL, 0, "nvcc -dryrun failed (%s):\n%s%s",
                 ag_str_cstr(&how), ag_str_cstr(&se), ag_str_cstr(&so));
    ag_str_release(&how);
    rc = AG_ECHILD;
    goto out;
  }
  /* nvcc prints its steps ("#$ ptxas ...") on stderr */
  ag_str_printf(&se, "\n%s", ag_str_cstr(&so));
  for (const char *l = ag_str_cstr(&se); l && *l;) {
    const char *nl = strchr(l, '\n');
    size_t ll = nl ? (size_t)(nl - l) : strlen(l);
    if (ll > 3 && !strncmp(l, "#$ ", 3)) {
      char *line = ag_strndup(l + 3, ll - 3);
      n = 0;
      if (!line || (rc = split_words(line, &words, &n))) {
        ag_free(line);
        rc = rc ? rc : AG_ENOMEM;
        goto out;
      }
      ag_free(line);
      const char *tool = n ? strrchr(words[0], '/') : NULL;
      tool = tool ? tool + 1 : n ? words[0] : "";
      if (!strcmp(tool, "ptxas")) {
        nlines++;
        /* keep the options: drop the program, the input (.ptx) and -o FILE */
        char **v = ag_calloc((size_t)n + 1, sizeof *v);
        int k = 0, arch_ok = !arch;
        if (!v) {
          rc = AG_ENOMEM;
          goto out;
        }
        for (int i = 1; i < n; i++) {
          size_t wl = strlen(words[i]);
          if (!strcmp(words[i], "-o") || !strcmp(words[i], "--output-file")) {
            i++;
            continue;
          }
          if (words[i][0] != '-' && wl > 4 && !strcmp(words[i] + wl - 4, ".ptx"))
            continue;
          if (arch && ((!strncmp(words[i], "-arch=", 6) && !strcmp(words[i] + 6, arch)) ||
                       (!strcmp(words[i], "-arch") && i + 1 < n && !strcmp(words[i + 1], arch))))
            arch_ok = 1;
          v[k++] = words[i];
          words[i] = NULL;
        }
        if (arch_ok && !found) {
          opts = v;
          found = 1;
        } else {
          ag_strv_free(v);
        }
      }
      free_words(words, n);
      words = NULL;
      n = 0;
    }
    l = nl ? nl + 1 : NULL;
  }
  if (!found) {
    ag_diags_add(diags, AG_SEV_ERROR, cu, 0, 0, NULL, 0,
                 nlines ? "nvcc with these flags runs ptxas for other architectures than "
                          "the PTX's .target '%s': give the flags of one build"
                        : "nvcc with these flags runs no ptxas (%s): a spec's flags must "
                          "build machine code for one architecture",
                 nlines ? (arch ? arch : "") : "no sm_ architecture");
    rc = AG_EINVAL;
    goto out;
  }
  *out = opts;
  opts = NULL;
out:
  free_words(words, n);
  ag_strv_free(opts);
  ag_free(argv);
  ag_free(nvcc);
  ag_str_release(&so);
  ag_str_release(&se);
  return rc;
}

void ag_spec_options_free(char **opts) { ag_strv_free(opts); }
