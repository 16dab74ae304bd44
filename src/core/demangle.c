/*
 * demangle.c — a small Itanium C++ ABI demangler for CUDA kernel names
 * (argus/demangle.h). A recursive-descent parser over the mangled name that
 * renders each piece into one scratch buffer as it goes; a piece is a span
 * of that buffer, so the substitution table (S_, S0_, ...) and the template
 * arguments (T_, T0_, ...) are spans too, and composite types are built by
 * copying a span and appending (" const", "*"): the postfix spelling c++filt
 * uses ("float const*") needs nothing more. Candidates for substitution are
 * added in the order the ABI gives (prefixes, template prefixes, template
 * parameters used as types, every composite type), which the tests check
 * against c++filt on names nvcc produced.
 *
 * Why not libiberty's cplus_demangle: libargus_host is linked into user
 * harnesses and depends on libc alone (it opens the driver with dlopen);
 * libiberty would add a static library, its licence, and a -dev package to
 * carry to the GPU machine, for a subset a few hundred lines cover.
 *
 * Bounded: 16 KiB of scratch, 256 substitutions, 64 template arguments,
 * nesting depth 64; a name past those is refused (AG_DEMANGLE_EFULL).
 * Called once per kernel name a report shows.
 */
#include "argus/demangle.h"

#include <string.h>

typedef struct span {
  size_t off, len;
} span;

typedef struct dm {
  const char *p, *end;
  char buf[16384];
  size_t blen;
  span subs[256];
  int nsubs;
  span targs[64]; /* the function's template arguments */
  int ntargs;
  int err; /* 0, AG_DEMANGLE_EINVAL or AG_DEMANGLE_EFULL */
  int depth;
} dm;

static const span NOSPAN = {0, 0};

static void bad(dm *d, int e) {
  if (!d->err)
    d->err = e;
}

static int peek(const dm *d) { return d->p < d->end ? (unsigned char)*d->p : 0; }
static int peek2(const dm *d) { return d->p + 1 < d->end ? (unsigned char)d->p[1] : 0; }

static span put(dm *d, const char *s, size_t n) {
  span r = {d->blen, 0};
  if (d->err)
    return r;
  if (d->blen + n >= sizeof d->buf) {
    bad(d, AG_DEMANGLE_EFULL);
    return r;
  }
  memmove(d->buf + d->blen, s, n);
  d->blen += n;
  r.len = n;
  return r;
}

/* A new span: a's text, then suffix. */
static span cat(dm *d, span a, const char *suffix) {
  span r = put(d, d->buf + a.off, a.len);
  span s = put(d, suffix, strlen(suffix));
  r.len += s.len;
  return r;
}

/* A new span joining a and b with sep between. */
static span join(dm *d, span a, const char *sep, span b) {
  span r = cat(d, a, sep);
  span s = put(d, d->buf + b.off, b.len);
  r.len += s.len;
  return r;
}

static void add_sub(dm *d, span s) {
  if (d->nsubs >= (int)(sizeof d->subs / sizeof d->subs[0])) {
    bad(d, AG_DEMANGLE_EFULL);
    return;
  }
  d->subs[d->nsubs++] = s;
}

/* <number> ::= [n] <decimal digits>; *neg says whether it had the n. */
static int number(dm *d, unsigned long long *v, int *neg) {
  *v = 0;
  if (neg)
    *neg = 0;
  if (neg && peek(d) == 'n') {
    *neg = 1;
    d->p++;
  }
  if (peek(d) < '0' || peek(d) > '9')
    return -1;
  while (peek(d) >= '0' && peek(d) <= '9') {
    if (*v > 1844674407370955161ull)
      return -1;
    *v = *v * 10 + (unsigned)(*d->p++ - '0');
  }
  return 0;
}

/* The index of S_ (0), S0_ (1), ... SA_ (11) or T_, T0_, ...: the cursor is
 * after the letter. */
static int seq_id(dm *d, int *idx) {
  int v = 0;
  if (peek(d) == '_') {
    d->p++;
    *idx = 0;
    return 0;
  }
  while (peek(d) && peek(d) != '_') {
    int c = peek(d);
    int x = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'Z' ? c - 'A' + 10 : -1;
    if (x < 0 || v > 100000)
      return -1;
    v = v * 36 + x;
    d->p++;
  }
  if (peek(d) != '_')
    return -1;
  d->p++;
  *idx = v + 1;
  return 0;
}

static span source_name(dm *d) {
  unsigned long long n;
  if (number(d, &n, NULL) || n == 0 || n > (unsigned long long)(d->end - d->p)) {
    bad(d, AG_DEMANGLE_EINVAL);
    return NOSPAN;
  }
  const char *s = d->p;
  d->p += n;
  if (n >= 10 && !strncmp(s, "_GLOBAL__N", 10))
    return put(d, "(anonymous namespace)", 21);
  return put(d, s, (size_t)n);
}

static span type(dm *d);
static span template_args(dm *d, int capture);

/* L <type> <value> E, for the integer and bool types. */
static span literal(dm *d) {
  static const struct {
    char code;
    const char *pre, *post;
  } ints[] = {{'i', "", ""},   {'j', "", "u"},  {'l', "", "l"},
              {'m', "", "ul"}, {'x', "", "ll"}, {'y', "", "ull"},
              {'c', "(char)", ""}, {'a', "(signed char)", ""}, {'h', "(unsigned char)", ""},
              {'s', "(short)", ""}, {'t', "(unsigned short)", ""}};
  d->p++; /* L */
  int code = peek(d);
  if (!code) {
    bad(d, AG_DEMANGLE_EINVAL);
    return NOSPAN;
  }
  d->p++;
  unsigned long long v;
  int neg;
  if (number(d, &v, &neg) || peek(d) != 'E') {
    bad(d, AG_DEMANGLE_EINVAL);
    return NOSPAN;
  }
  d->p++;
  if (code == 'b' && !neg && v <= 1)
    return v ? put(d, "true", 4) : put(d, "false", 5);
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
    if (ints[i].code == code) {
      char num[32];
      size_t k = sizeof num;
      num[--k] = 0;
      do
        num[--k] = (char)('0' + v % 10);
      while ((v /= 10) && k > 1);
      if (neg)
        num[--k] = '-';
      span r = put(d, ints[i].pre, strlen(ints[i].pre));
      r.len += put(d, num + k, strlen(num + k)).len;
      r.len += put(d, ints[i].post, strlen(ints[i].post)).len;
      return r;
    }
  bad(d, AG_DEMANGLE_EINVAL); /* a float literal, nullptr, an external name */
  return NOSPAN;
}

/* T_ / T<n>_: the function's template argument (cursor at the T). */
static span template_param(dm *d) {
  d->p++;
  int i;
  if (seq_id(d, &i) || i >= d->ntargs) {
    bad(d, AG_DEMANGLE_EINVAL);
    return NOSPAN;
  }
  return d->targs[i];
}

/* One template argument: a type, a literal, X <param> E, or a pack J ... E. */
static span template_arg(dm *d) {
  int c = peek(d);
  if (c == 'L')
    return literal(d);
  if (c == 'X') {
    d->p++;
    if (peek(d) != 'T') {
      bad(d, AG_DEMANGLE_EINVAL); /* an expression other than a parameter */
      return NOSPAN;
    }
    span r = template_param(d);
    if (peek(d) != 'E')
      bad(d, AG_DEMANGLE_EINVAL);
    d->p++;
    return r;
  }
  if (c == 'J') {
    d->p++;
    span r = put(d, "", 0);
    int first = 1;
    while (!d->err && peek(d) && peek(d) != 'E') {
      span a = template_arg(d);
      r = first ? a : join(d, r, ", ", a);
      first = 0;
    }
    if (peek(d) != 'E')
      bad(d, AG_DEMANGLE_EINVAL);
    d->p++;
    return r;
  }
  return type(d);
}

/* I <template-arg>+ E rendered "<a, b>"; capture: they are the function's. */
static span template_args(dm *d, int capture) {
  d->p++; /* I */
  span args[64];
  int n = 0;
  while (!d->err && peek(d) && peek(d) != 'E') {
    if (n >= 64) {
      bad(d, AG_DEMANGLE_EFULL);
      break;
    }
    args[n++] = template_arg(d);
  }
  if (peek(d) != 'E')
    bad(d, AG_DEMANGLE_EINVAL);
  d->p++;
  if (d->err)
    return NOSPAN;
  span r = put(d, "<", 1);
  for (int i = 0; i < n; i++) {
    if (i)
      r.len += put(d, ", ", 2).len;
    r.len += put(d, d->buf + args[i].off, args[i].len).len;
  }
  /* c++filt's spelling: "A<B<int> >" */
  if (r.len && d->buf[r.off + r.len - 1] == '>')
    r.len += put(d, " ", 1).len;
  r.len += put(d, ">", 1).len;
  if (capture) {
    memcpy(d->targs, args, (size_t)n * sizeof *args);
    d->ntargs = n;
  }
  return r;
}

/* S_ / S<n>_ or one of the std abbreviations (cursor at the S). *std_prefix:
 * it was St, which the caller completes with the next name. */
static span substitution(dm *d, int *std_prefix) {
  static const struct {
    char c;
    const char *name;
  } ab[] = {{'a', "std::allocator"}, {'b', "std::basic_string"}, {'s', "std::string"},
            {'i', "std::istream"},    {'o', "std::ostream"},      {'d', "std::iostream"}};
  *std_prefix = 0;
  d->p++;
  int c = peek(d);
  if (c == 't') {
    d->p++;
    *std_prefix = 1;
    return put(d, "std", 3);
  }
  for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++)
    if (ab[i].c == c) {
      d->p++;
      return put(d, ab[i].name, strlen(ab[i].name));
    }
  int i;
  if (seq_id(d, &i) || i >= d->nsubs) {
    bad(d, AG_DEMANGLE_EINVAL);
    return NOSPAN;
  }
  return d->subs[i];
}

/* <name>: nested (N ... E), unscoped (with St), or a substitution with
 * template arguments. top: the encoding's name, whose last template
 * arguments are the function's. *tmpl: it ended in template arguments. */
static span name(dm *d, int top, int *tmpl) {
  *tmpl = 0;
  if (++d->depth > 64) {
    bad(d, AG_DEMANGLE_EFULL);
    return NOSPAN;
  }
  span r = NOSPAN;
  int c = peek(d);
  if (c == 'N') {
    d->p++;
    if (peek(d) == 'K' || peek(d) == 'V' || peek(d) == 'r' || peek(d) == 'R' ||
        peek(d) == 'O') {
      bad(d, AG_DEMANGLE_EINVAL); /* a member function's qualifiers */
      goto out;
    }
    int have = 0;
    while (!d->err && peek(d) && peek(d) != 'E') {
      int k = peek(d);
      if (k == 'I') {
        if (!have) {
          bad(d, AG_DEMANGLE_EINVAL);
          break;
        }
        span a = template_args(d, top); /* the last ones are the function's */
        r = join(d, r, "", a);
        *tmpl = 1;
      } else if (k == 'S' && !have) {
        int stdp;
        r = substitution(d, &stdp);
        have = 1;
        *tmpl = 0;
        if (stdp) { /* St in a nested name: std:: and the next component */
          span s = source_name(d);
          r = join(d, r, "::", s);
        } else {
          continue; /* an existing candidate: not added again */
        }
      } else if (k >= '0' && k <= '9') {
        span s = source_name(d);
        r = have ? join(d, r, "::", s) : s;
        have = 1;
        *tmpl = 0;
      } else {
        bad(d, AG_DEMANGLE_EINVAL); /* ctor/dtor, operators, locals, lambdas */
        break;
      }
      if (peek(d) != 'E')
        add_sub(d, r); /* a prefix (or template prefix) of what follows */
    }
    if (peek(d) != 'E')
      bad(d, AG_DEMANGLE_EINVAL);
    d->p++;
  } else if (c == 'S') {
    int stdp;
    r = substitution(d, &stdp);
    if (stdp) {
      span s = source_name(d);
      r = join(d, r, "::", s);
      if (peek(d) == 'I')
        add_sub(d, r);
    }
    if (peek(d) == 'I') {
      span a = template_args(d, top);
      r = join(d, r, "", a);
      *tmpl = 1;
    }
  } else if (c >= '0' && c <= '9') {
    r = source_name(d);
    if (peek(d) == 'I') {
      add_sub(d, r); /* an unscoped template name */
      span a = template_args(d, top);
      r = join(d, r, "", a);
      *tmpl = 1;
    }
  } else {
    bad(d, AG_DEMANGLE_EINVAL);
  }
out:
  d->depth--;
  return r;
}

static const struct {
  char c;
  const char *name;
} builtins[] = {{'v', "void"},          {'w', "wchar_t"},
                {'b', "bool"},          {'c', "char"},
                {'a', "signed char"},   {'h', "unsigned char"},
                {'s', "short"},         {'t', "unsigned short"},
                {'i', "int"},           {'j', "unsigned int"},
                {'l', "long"},          {'m', "unsigned long"},
                {'x', "long long"},     {'y', "unsigned long long"},
                {'n', "__int128"},      {'o', "unsigned __int128"},
                {'f', "float"},         {'d', "double"},
                {'e', "long double"},   {'g', "__float128"},
                {'z', "..."}};

static span type(dm *d) {
  if (++d->depth > 64) {
    bad(d, AG_DEMANGLE_EFULL);
    return NOSPAN;
  }
  span r = NOSPAN;
  int c = peek(d);
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (builtins[i].c == c) {
      d->p++;
      r = put(d, builtins[i].name, strlen(builtins[i].name));
      goto out;
    }
  switch (c) {
  case 'D': {
    static const struct {
      const char *code, *name;
    } dt[] = {{"Dh", "half"},     {"Di", "char32_t"}, {"Ds", "char16_t"},
              {"Du", "char8_t"},  {"Dn", "decltype(nullptr)"}, {"DF16_", "_Float16"}};
    for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++)
      if ((size_t)(d->end - d->p) >= strlen(dt[i].code) &&
          !strncmp(d->p, dt[i].code, strlen(dt[i].code))) {
        d->p += strlen(dt[i].code);
        r = put(d, dt[i].name, strlen(dt[i].name));
        goto out;
      }
    bad(d, AG_DEMANGLE_EINVAL); /* pack expansions, decltype, vendor types */
    goto out;
  }
  case 'r':
  case 'V':
  case 'K': {
    const char *q[3];
    int nq = 0;
    while (nq < 3 && (peek(d) == 'r' || peek(d) == 'V' || peek(d) == 'K')) {
      int k = *d->p++;
      q[nq++] = k == 'r' ? " restrict" : k == 'V' ? " volatile" : " const";
    }
    r = type(d);
    for (int i = nq - 1; i >= 0 && !d->err; i--) /* K outermost-last: "const volatile" */
      r = cat(d, r, q[i]);
    add_sub(d, r);
    goto out;
  }
  case 'P':
  case 'R':
  case 'O':
    d->p++;
    r = type(d);
    r = cat(d, r, c == 'P' ? "*" : c == 'R' ? "&" : "&&");
    add_sub(d, r);
    goto out;
  case 'T':
    r = template_param(d);
    if (peek(d) == 'I') {
      bad(d, AG_DEMANGLE_EINVAL); /* a template template parameter */
      goto out;
    }
    add_sub(d, r);
    goto out;
  case 'S': {
    if (peek2(d) == 't') { /* std:: class type */
      int tmpl;
      r = name(d, 0, &tmpl);
      add_sub(d, r);
      goto out;
    }
    int stdp;
    r = substitution(d, &stdp);
    if (peek(d) == 'I') {
      span a = template_args(d, 0);
      r = join(d, r, "", a);
      add_sub(d, r);
    }
    goto out;
  }
  case 'N':
  case '0': case '1': case '2': case '3': case '4':
  case '5': case '6': case '7': case '8': case '9': {
    int tmpl;
    r = name(d, 0, &tmpl);
    add_sub(d, r); /* the class type */
    goto out;
  }
  default:
    bad(d, AG_DEMANGLE_EINVAL); /* arrays, functions, member pointers, vendor types */
  }
out:
  d->depth--;
  return r;
}

int ag_demangle(const char *mangled, char *out, size_t cap, int form) {
  if (out && cap)
    out[0] = 0;
  if (!mangled || strncmp(mangled, "_Z", 2) || !out || !cap)
    return AG_DEMANGLE_EINVAL;
  dm d;
  d.p = mangled + 2;
  d.end = mangled + strlen(mangled);
  d.blen = 0;
  d.nsubs = d.ntargs = d.err = d.depth = 0;
  int tmpl;
  span nm = name(&d, 1, &tmpl);
  span ret = NOSPAN;
  if (!d.err && tmpl && peek(&d))
    ret = type(&d); /* a template function's name is followed by its return type */
  if (!d.err && !peek(&d))
    bad(&d, AG_DEMANGLE_EINVAL); /* a kernel has a parameter list ("v" when empty) */
  span ps[128];
  int np = 0;
  if (peek(&d) == 'v' && d.p + 1 == d.end)
    d.p++;
  while (!d.err && peek(&d)) {
    if (np >= 128) {
      bad(&d, AG_DEMANGLE_EFULL);
      break;
    }
    ps[np++] = type(&d);
  }
  span params = put(&d, "(", 1); /* rendered after the types: one span */
  for (int i = 0; i < np && !d.err; i++) {
    if (i)
      params.len += put(&d, ", ", 2).len;
    params.len += put(&d, d.buf + ps[i].off, ps[i].len).len;
  }
  params.len += put(&d, ")", 1).len;
  if (d.err)
    return d.err;
  size_t need = form == AG_DEMANGLE_SHORT ? nm.len
                                          : (ret.len ? ret.len + 1 : 0) + nm.len + params.len;
  if (need + 1 > cap)
    return AG_DEMANGLE_EFULL;
  size_t k = 0;
  if (form != AG_DEMANGLE_SHORT && ret.len) {
    memcpy(out, d.buf + ret.off, ret.len);
    k = ret.len;
    out[k++] = ' ';
  }
  memcpy(out + k, d.buf + nm.off, nm.len);
  k += nm.len;
  if (form != AG_DEMANGLE_SHORT) {
    memcpy(out + k, d.buf + params.off, params.len);
    k += params.len;
  }
  out[k] = 0;
  return (int)k;
}

size_t ag_demangle_prefix(const char *mangled, const char *query) {
  if (!mangled || !query)
    return 0;
  size_t n = strlen(mangled);
  if (!strncmp(query, mangled, n) && (query[n] == '/' || !query[n]))
    return n;
  char buf[4096];
  for (int form = AG_DEMANGLE_FULL; form <= AG_DEMANGLE_SHORT; form++) {
    int len = ag_demangle(mangled, buf, sizeof buf, form);
    if (len > 0 && !strncmp(query, buf, (size_t)len) &&
        (query[len] == '/' || !query[len]))
      return (size_t)len;
  }
  return 0;
}

size_t ag_demangle_path(const char *qname, char *out, size_t cap) {
  if (!out || !cap)
    return 0;
  out[0] = 0;
  if (!qname)
    return 0;
  const char *slash = strchr(qname, '/'); /* a mangled name has no '/' */
  size_t rl = slash ? (size_t)(slash - qname) : strlen(qname);
  char root[4096];
  int n = -1;
  if (rl < sizeof root && !strncmp(qname, "_Z", 2)) {
    memcpy(root, qname, rl);
    root[rl] = 0;
    n = ag_demangle(root, out, cap, AG_DEMANGLE_SHORT);
  }
  if (n < 0) {
    n = 0;
    rl = 0;
  }
  size_t k = (size_t)n, rest = strlen(qname + rl);
  if (k + rest >= cap)
    rest = cap - 1 - k;
  memcpy(out + k, qname + rl, rest);
  out[k + rest] = 0;
  return k + rest;
}

int ag_demangle_resolve(const char *query, const char *const *kernels, int n, char *out,
                        size_t cap) {
  if (!query || !out || !cap)
    return AG_DEMANGLE_EINVAL;
  int hit = -1;
  size_t at = 0;
  for (int i = 0; i < n && hit < 0; i++) {
    size_t k = kernels[i] ? ag_demangle_prefix(kernels[i], query) : 0;
    if (k && strncmp(query, kernels[i], k)) /* by a demangled spelling */
      hit = i, at = k;
  }
  const char *head = hit >= 0 ? kernels[hit] : "";
  size_t hl = strlen(head), rest = strlen(query + at);
  if (hl + rest + 1 > cap)
    return AG_DEMANGLE_EFULL;
  memcpy(out, head, hl);
  memcpy(out + hl, query + at, rest + 1);
  return hit >= 0;
}
