/*
 * sha256.c — SHA-256 through OpenSSL's libcrypto (EVP). Content addresses in
 * the workspace and task keys are SHA-256 hex strings.
 */
#include "argus/core.h"

#include <openssl/evp.h>

int ag_sha256_begin(ag_sha256 *h) {
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  if (!c)
    return AG_ENOMEM;
  if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(c);
    return AG_EINVAL;
  }
  h->ctx = c;
  return 0;
}

int ag_sha256_update(ag_sha256 *h, const void *data, size_t n) {
  return EVP_DigestUpdate(h->ctx, data, n) == 1 ? 0 : AG_EINVAL;
}

int ag_sha256_end(ag_sha256 *h, unsigned char out[32], char hex[65]) {
  unsigned char md[32];
  unsigned int len = 0;
  int ok = EVP_DigestFinal_ex(h->ctx, md, &len) == 1 && len == 32;
  EVP_MD_CTX_free(h->ctx);
  h->ctx = NULL;
  if (!ok)
    return AG_EINVAL;
  if (out)
    for (int i = 0; i < 32; i++)
      out[i] = md[i];
  if (hex) {
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
      hex[2 * i] = digits[md[i] >> 4];
      hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = 0;
  }
  return 0;
}

void ag_sha256_abort(ag_sha256 *h) {
  EVP_MD_CTX_free(h->ctx);
  h->ctx = NULL;
}

int ag_sha256_hex(const void *data, size_t n, char hex[65]) {
  ag_sha256 h;
  int rc = ag_sha256_begin(&h);
  if (rc)
    return rc;
  if ((rc = ag_sha256_update(&h, data, n))) {
    ag_sha256_abort(&h);
    return rc;
  }
  return ag_sha256_end(&h, NULL, hex);
}
