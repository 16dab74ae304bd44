/*
 * fuzz_ptx.c — libFuzzer target for the PTX front end: any input must parse
 * or be rejected with a diagnostic; a parsed module must print back byte for
 * byte, and discovery must succeed or report errors, never crash or hang.
 * Built with clang -fsanitize=fuzzer,address (tests/ptx/CMakeLists.txt).
 */
#include "argus/ptx.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  ag_diags d;
  ag_diags_init(&d);
  ag_ptx_module *m = NULL;
  int rc = ag_ptx_parse((const char *)data, size, "fuzz.ptx", &d, &m);
  if (rc == 0) {
    ag_str out = AG_STR_INIT;
    if (ag_ptx_print(m, &out) || out.len != size || (size && memcmp(out.p, data, size)))
      abort(); /* round trip broken */
    ag_str_release(&out);
    ag_ptx_regions *R;
    rc = ag_ptx_discover(m, &d, &R);
    if (rc != 0 && rc != AG_EPARSE)
      abort();
    if (rc == 0) {
      json_t *j = ag_ptx_regions_to_json(m, R);
      json_decref(j);
      ag_str t = AG_STR_INIT;
      ag_ptx_regions_format(m, R, &t);
      ag_str_release(&t);
    } else if (d.nerrors == 0) {
      abort(); /* an error without a diagnostic */
    }
  } else if (rc != AG_EPARSE || d.nerrors == 0) {
    abort();
  }
  ag_ptx_module_free(m);
  ag_diags_release(&d);
  return 0;
}
