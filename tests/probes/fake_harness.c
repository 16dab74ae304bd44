/*
 * fake_harness.c — a harness library for CPU tests of the multi-variant
 * worker (with fake_cuda.c as the driver). argv[1] says how it behaves:
 * ok (loads argv[2], launches argv[3] times (default once), finishes), fail
 * (returns 3), crash (SIGSEGV), exit (calls exit(5)), hang (sleeps), poison (ok, then a "GPU fault"),
 * noevidence (returns 0 without loading anything), env (returns 4 unless the
 * job's Argus environment is set), template (ok, launching the kernel named
 * argv[3], e.g. by its demangled name, with dynamic shared memory), ranges
 * (ok, the three launches in ranges: outer { launch, inner { launch } },
 * launch; the hardware counters' user ranges), abortafterclose (ok, then
 * SIGABRT: a library's teardown at exit), abortbeforeclose (ok up to the
 * finish, SIGABRT before the close), exitafterclose (ok, then exit 7). Built
 * as a library (ARGUS_HARNESS_MAIN).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argus/host.h"

static int run_ok(const char *module, const char *kernel, unsigned smem, int launches,
                  int ranges, int abort_before_close) {
  ag_host *h = NULL;
  ag_host_module *m = NULL;
  ag_host_kernel *k = NULL;
  int rc = 1;
  int bad = ag_host_open(&h) || ag_host_load(h, module, &m) || ag_host_kernel_get(m, kernel, &k);
  /* ranges: outer { launch, inner { launch } }, launch */
  static const char *const ops[] = {"push outer", "launch", "push inner", "launch", "pop", "pop",
                                    "launch"};
  for (int i = 0; !bad && ranges && i < 7; i++)
    bad = !strcmp(ops[i], "launch")
              ? ag_host_launch(k, (ag_host_dim){2, 1, 1}, (ag_host_dim){64, 1, 1}, 0, NULL, NULL)
          : !strcmp(ops[i], "pop") ? ag_host_range_pop(h)
                                   : ag_host_range_push(h, ops[i] + 5);
  for (int i = 0; !bad && !ranges && i < launches; i++)
    bad = ag_host_launch(k, (ag_host_dim){2, 1, 1}, (ag_host_dim){64, 1, 1}, smem, NULL, NULL);
  if (bad || ag_host_finish(h)) {
    fprintf(stderr, "fake harness: %s\n", ag_host_errmsg(h));
  } else {
    printf("fake harness: ok\n");
    rc = 0;
  }
  if (abort_before_close) {
    fflush(stdout);
    raise(SIGABRT);
  }
  ag_host_close(h);
  return rc;
}

ARGUS_HARNESS_MAIN(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ok";
  const char *module = argc > 2 ? argv[2] : "/dev/null";
  if (!strcmp(mode, "fail")) {
    fprintf(stderr, "fake harness: results do not match\n");
    return 3;
  }
  if (!strcmp(mode, "crash"))
    raise(SIGSEGV);
  if (!strcmp(mode, "exit"))
    exit(5);
  if (!strcmp(mode, "hang"))
    sleep(100);
  if (!strcmp(mode, "noevidence"))
    return 0;
  if (!strcmp(mode, "env")) {
    const char *c = getenv("ARGUS_COLLECT");
    if (!getenv("ARGUS_OUT") || !c || strcmp(c, "trace"))
      return 4;
  }
  /* template: the kernel by its demangled name (argv[3]), with 99,328
   * bytes of dynamic shared memory (examples/tma_probe's); otherwise
   * argv[3] is the number of launches */
  int tmpl = !strcmp(mode, "template") && argc > 3;
  int rc = run_ok(module, tmpl ? argv[3] : "kern", tmpl ? 99328 : 0,
                  !tmpl && argc > 3 ? atoi(argv[3]) : 1, !strcmp(mode, "ranges"),
                  !strcmp(mode, "abortbeforeclose"));
  if (!strcmp(mode, "abortafterclose")) {
    fprintf(stderr, "free(): invalid pointer\n"); /* what glibc said on the H200 */
    raise(SIGABRT);
  }
  if (!strcmp(mode, "exitafterclose"))
    exit(7);
  if (!strcmp(mode, "poison")) {
    void *lib = dlopen(getenv("ARGUS_LIBCUDA"), RTLD_NOW | RTLD_NOLOAD);
    void (*poison)(void) = NULL;
    if (lib)
      *(void **)(&poison) = dlsym(lib, "fake_cuda_poison");
    if (poison)
      poison();
  }
  return rc;
}
