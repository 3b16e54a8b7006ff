/* sieve: the Lua sandbox: libraries by allow-list and a require that only
 * looks where the host says.
 *
 * As in Redis (script_lua.c) the safe libraries are opened and the rest is
 * left out, rather than opening everything and deleting the dangerous parts
 * one by one: what a future Lua adds stays out until allowed.  Scripts get
 * base (without dofile and loadfile, which read any file, and with a load()
 * that refuses binary chunks), coroutine, table, string, math, utf8, and of
 * os only clock, time, date and difftime.  `allow` adds io (with dofile and
 * loadfile), the whole of os, debug, and package (loadlib and C modules).
 *
 * Lua's count hook does not reach everywhere, so the sandbox closes the
 * gaps where a script could run on past its limit:
 *   - xpcall's message handler: an error raised by the hook calls it with
 *     hooks off, so once the limit is spent the handler is skipped and the
 *     error goes on as it is;
 *   - __gc: Lua runs finalizers with hooks off, so setmetatable keeps a
 *     table's __gc from Lua's own collector and runs it from a C sentinel,
 *     in a thread of its own under the limit (sieve__lua_call_hooked);
 *   - string.rep, find, match, gmatch and gsub, which can run for hours in
 *     one C call: each estimates its worst case (the bytes it would write,
 *     the backtracking its pattern allows on that subject) and refuses
 *     what the call's limit could not stop;
 *   - table.move, concat, insert, remove and sort, whose loops run over a
 *     range the script gives (or a __len it defines), not the table's
 *     contents: table.move({}, 1, 2^40, 1, {}) is 2^40 turns in one C
 *     call.  Each is held to its range the same way.  (table.unpack and
 *     string.byte stop at the stack's size, utf8's functions and
 *     string.format at their subject's, the rest of the allowed library is
 *     bounded by what it is given.)
 */
#include "sieve-config.h"

#include <math.h>
#include <string.h>

#include "lua/lua-private.h"

char *
sieve__lua_project_dir(void)
{
  /* Uninstalled (the binary under the build root), the source tree's lua/;
   * installed, $datadir/sieve/lua: the same rule the plugin loader uses. */
  g_autofree char *exe = g_file_read_link("/proc/self/exe", NULL);
  g_autofree char *root = g_canonicalize_filename(SIEVE_BUILD_ROOT, NULL);
  if (exe != NULL && g_str_has_prefix(exe, root) && exe[strlen(root)] == G_DIR_SEPARATOR)
    return g_build_filename(SIEVE_SOURCE_ROOT, "lua", NULL);
  return g_build_filename(SIEVE_DATADIR, "lua", NULL);
}

/* load() with binary chunks refused unless package is allowed. */
static int
safe_load(lua_State *L)
{
  SieveLuaHost *host = sieve__lua_host(L);
  int top = lua_gettop(L);
  const char *mode = luaL_optstring(L, 3, "bt");
  if (!(host->settings.allow & SIEVE_LUA_ALLOW_PACKAGE) && strchr(mode, 'b') != NULL) {
    if (top < 3)
      lua_settop(L, 3);
    lua_pushstring(L, "t");
    lua_replace(L, 3);
  }
  lua_pushvalue(L, lua_upvalueindex(1)); /* the real load */
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* The k function of the wrappers below that call on with lua_callk: the
 * results are what is on the stack. */
static int
finish_k(lua_State *L, int status, lua_KContext ctx)
{
  (void) status;
  (void) ctx;
  return lua_gettop(L);
}

/* ---- xpcall ---------------------------------------------------------------- */

static int
handler_trampoline(lua_State *L)
{
  /* When the limit is spent, the error came from the hook and this runs
   * with hooks off: the script's handler could loop for ever. */
  if (sieve__lua_host(L)->limit_hit != NULL)
    return 1;
  int n = lua_gettop(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, n, 1);
  return 1;
}

static int
safe_xpcall(lua_State *L)
{
  int n = lua_gettop(L);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_pushvalue(L, 2);
  lua_pushcclosure(L, handler_trampoline, 1);
  lua_replace(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1)); /* the real xpcall */
  lua_insert(L, 1);
  lua_callk(L, n, LUA_MULTRET, 0, finish_k);
  return lua_gettop(L);
}

/* ---- __gc under the limit -------------------------------------------------- */

#define GC_SENTINEL "sieve.gc_sentinel"
#define GC_SENTINELS "sieve.gc_sentinels" /* registry: {table = sentinel}, weak keys */

/* A sentinel lives as long as its table (an ephemeron: the table is its
 * weak key), so Lua finalizes it when the table goes, with the table
 * resurrected in its user value: the table's __gc, read now as Lua would,
 * runs under the limit. */
static int
sentinel_gc(lua_State *L)
{
  lua_getiuservalue(L, 1, 1);
  if (!lua_istable(L, -1) || !lua_getmetatable(L, -1))
    return 0;
  lua_pushliteral(L, "__gc");
  lua_rawget(L, -2);
  if (lua_isnil(L, -1))
    return 0;
  lua_pushvalue(L, -3); /* the table */
  sieve__lua_call_hooked(L, 1);
  return 0;
}

static int
safe_setmetatable(lua_State *L)
{
  int t = lua_type(L, 2);
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2, "nil or table");
  if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
    return luaL_error(L, "cannot change a protected metatable");
  lua_settop(L, 2);
  if (t == LUA_TNIL) {
    lua_setmetatable(L, 1);
    return 1;
  }
  lua_pushliteral(L, "__gc");
  lua_rawget(L, 2);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_setmetatable(L, 1);
    return 1;
  }
  /* Set the metatable with __gc hidden for a moment, so that Lua's own
   * collector never marks the table; the sentinel stands in for it. */
  int saved = lua_gettop(L);
  lua_pushliteral(L, "__gc");
  lua_pushnil(L);
  lua_rawset(L, 2);
  lua_pushvalue(L, 2);
  lua_setmetatable(L, 1);
  lua_pushliteral(L, "__gc");
  lua_pushvalue(L, saved);
  lua_rawset(L, 2);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, GC_SENTINELS);
  int sentinels = lua_gettop(L);
  lua_pushvalue(L, 1);
  if (lua_rawget(L, sentinels) == LUA_TNIL) { /* once per table, as Lua marks it once */
    lua_newuserdatauv(L, 0, 1);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    luaL_setmetatable(L, GC_SENTINEL);
    lua_pushvalue(L, 1);
    lua_insert(L, -2);
    lua_rawset(L, sentinels);
  }
  lua_settop(L, 1);
  return 1;
}

static void
open_gc_sentinels(lua_State *L)
{
  luaL_newmetatable(L, GC_SENTINEL);
  lua_pushcfunction(L, sentinel_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, GC_SENTINELS);
  lua_newtable(L);
  lua_pushliteral(L, "k");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
  lua_pushcfunction(L, safe_setmetatable);
  lua_setglobal(L, "setmetatable");
}

/* ---- string functions with bounded work ------------------------------------ */

/* Refuses a call whose worst case exceeds what the call's limit leaves:
 * Lua's hook cannot stop a C function once it runs. */
static void
check_steps(lua_State *L, const char *fn, double steps, const char *advice)
{
  SieveLuaHost *host = sieve__lua_host(L);
  sieve__lua_check_limit(L);
  double left = sieve__lua_steps_left(host);
  if (steps > left) {
    char msg[320]; /* luaL_error knows no %g */
    g_snprintf(msg, sizeof msg,
               "%s: this call could run for about %.3g steps in one C call, more than the %.3g its instruction or "
               "time limit leaves, and the limit cannot stop a C call (%s)",
               fn, steps, left, advice);
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    lua_error(L);
  }
}

/* Whether byte ch is in the class %cl (a letter of Lua's patterns) or is
 * the escaped character cl itself. */
static gboolean
class_has(int cl, int ch)
{
  gboolean in;
  switch (g_ascii_tolower(cl)) {
  case 'a': in = g_ascii_isalpha(ch); break;
  case 'c': in = g_ascii_iscntrl(ch); break;
  case 'd': in = g_ascii_isdigit(ch); break;
  case 'g': in = g_ascii_isgraph(ch); break;
  case 'l': in = g_ascii_islower(ch); break;
  case 'p': in = g_ascii_ispunct(ch); break;
  case 's': in = g_ascii_isspace(ch); break;
  case 'u': in = g_ascii_isupper(ch); break;
  case 'w': in = g_ascii_isalnum(ch); break;
  case 'x': in = g_ascii_isxdigit(ch); break;
  default: return cl == ch;
  }
  return g_ascii_isupper(cl) ? !in : in;
}

/* Whether byte ch matches the single-character item p[0..len) (%x, [set],
 * . or a literal), as Lua reads it. */
static gboolean
item_has(const char *p, size_t len, int ch)
{
  if (p[0] == '.')
    return TRUE;
  if (p[0] == '%')
    return class_has((unsigned char) p[1], ch);
  if (p[0] != '[')
    return (unsigned char) p[0] == ch;
  size_t i = 1, last = len - 1; /* p[last] is the closing ']' */
  gboolean negate = p[i] == '^', found = FALSE;
  if (negate)
    i++;
  for (; i < last; i++) {
    if (p[i] == '%' && i + 1 < last) {
      found |= class_has((unsigned char) p[++i], ch);
    } else if (i + 2 < last && p[i + 1] == '-') {
      found |= (unsigned char) p[i] <= ch && ch <= (unsigned char) p[i + 2];
      i += 2;
    } else
      found |= (unsigned char) p[i] == ch;
  }
  return negate ? !found : found;
}

/* The longest run of subject bytes the item matches: as far as a
 * repetition of it can reach, and so as many tries as it can backtrack. */
static double
longest_run(const char *p, size_t len, const char *subject, size_t ls)
{
  size_t best = 0, run = 0;
  for (size_t k = 0; k < ls; k++) {
    run = item_has(p, len, (unsigned char) subject[k]) ? run + 1 : 0;
    best = MAX(best, run);
  }
  return (double) best + 1;
}

/* The subject whose runs are known: a loop that calls find at each
 * position of one long text scans it once, not once per call.  The string
 * is held in the registry while it is cached, so its address names it. */
#define RUN_CACHE "sieve.run_cache" /* registry: {subject, {item = longest run}} */

static double
cached_run(lua_State *L, int subject_idx, const char *item, size_t len)
{
  size_t ls;
  const char *subject = lua_tolstring(L, subject_idx, &ls);
  if (lua_getfield(L, LUA_REGISTRYINDEX, RUN_CACHE) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 2, 0);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, RUN_CACHE);
  }
  int cache = lua_gettop(L);
  lua_rawgeti(L, cache, 1);
  if (!lua_rawequal(L, -1, subject_idx)) { /* another subject: start over */
    lua_pushvalue(L, subject_idx);
    lua_rawseti(L, cache, 1);
    lua_newtable(L);
    lua_rawseti(L, cache, 2);
  }
  lua_rawgeti(L, cache, 2);
  lua_pushlstring(L, item, len);
  lua_pushvalue(L, -1);
  double run;
  if (lua_rawget(L, -3) == LUA_TNUMBER) {
    run = lua_tonumber(L, -1);
    lua_pop(L, 1);
  } else {
    lua_pop(L, 1);
    run = longest_run(item, len, subject, ls);
    lua_pushnumber(L, run);
    lua_rawset(L, -3);
  }
  lua_settop(L, cache - 1);
  return run;
}

/* The most steps Lua's backtracking matcher can take for pattern p on the
 * subject: each start position, times the tries of every repetition item
 * (one more than the longest run of subject bytes it matches for *, + and
 * -, 2 for ?, the subject's length for %b and back-references, which scan
 * on every try), plus the scans.  A repetition with nothing after it does
 * not backtrack.  Costs O(subject x items) once per subject, what the
 * match itself costs when it goes well. */
static double
pattern_steps(lua_State *L, int subject_idx, const char *p, size_t lp, size_t ls, gboolean plain)
{
  double n = (double) ls + 1;
  gboolean special = FALSE;
  for (size_t k = 0; k < lp && !special; k++) /* as lstrlib decides; the pattern may hold zeros */
    special = strchr("^$*+?.([%-", p[k]) != NULL && p[k] != '\0';
  if (plain || !special)
    return n * ((double) lp + 1); /* a plain search, memchr and memcmp */
  size_t i = 0;
  double starts = n;
  if (p[0] == '^') {
    starts = 1;
    i = 1;
  }
  double product = 1;
  while (i < lp && product < 1e300) {
    char c = p[i];
    if (c == '(' || c == ')') {
      i++;
      continue;
    }
    if (c == '$' && i + 1 == lp)
      break;
    if (c == '%' && i + 1 < lp && (p[i + 1] == 'b' || g_ascii_isdigit(p[i + 1]))) {
      product *= n;
      i += p[i + 1] == 'b' ? 4 : 2;
      continue;
    }
    if (c == '%' && i + 1 < lp && p[i + 1] == 'f')
      i += 2; /* then its set, read below as an item without a quantifier */
    size_t item = i;
    if (p[i] == '%')
      i += 2;
    else if (p[i] == '[') {
      i++;
      if (i < lp && p[i] == '^')
        i++;
      do { /* the first ']' is a member */
        if (i < lp && p[i] == '%')
          i++;
        i++;
      } while (i < lp && p[i] != ']');
      i++;
    } else
      i++;
    if (i > lp) /* malformed: Lua's matcher says so at once */
      break;
    if (i < lp && strchr("*+-?", p[i]) != NULL) {
      char q = p[i++];
      size_t rest = i;
      while (rest < lp && p[rest] == ')')
        rest++;
      gboolean last = rest == lp || (rest + 1 == lp && p[rest] == '$');
      if (q == '?')
        product *= 2;
      else if (!last) /* without a subject: the cheap bound, its length (the runs are the whole subject's) */
        product *= subject_idx != 0 ? cached_run(L, subject_idx, p + item, i - 1 - item) : n;
    }
  }
  return starts * product + n;
}

/* string.find, match, gmatch, gsub: the real one (upvalue 1), after the check. */
static int
safe_pattern(lua_State *L)
{
  size_t ls, lp;
  luaL_checklstring(L, 1, &ls);
  const char *p = luaL_checklstring(L, 2, &lp);
  const char *fn = lua_tostring(L, lua_upvalueindex(2));
  gboolean plain = strcmp(fn, "string.find") == 0 && lua_toboolean(L, 4);
  /* find, match and gmatch start at init: what lies before is not searched
   * (a tokenizer calls find at each position of a long text). */
  if (strcmp(fn, "string.gsub") != 0 && lua_isinteger(L, 3)) {
    lua_Integer init = lua_tointeger(L, 3);
    size_t skip = init > 0 ? (size_t) MIN((lua_Unsigned) init - 1, ls)
                           : init < 0 && (lua_Unsigned) -init < ls ? ls - (size_t) -init : 0;
    ls -= skip;
  }
  double left = sieve__lua_steps_left(sieve__lua_host(L));
  /* The bound by the subject's length first: it costs nothing, and only a
   * call it cannot clear pays for the scan of the subject. */
  if (left == 0 || (!isinf(left) && pattern_steps(L, 0, p, lp, ls, plain) > left))
    check_steps(L, fn, pattern_steps(L, 1, p, lp, ls, plain),
                "use a smaller subject, or a pattern with fewer repetition items");
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_callk(L, lua_gettop(L) - 1, LUA_MULTRET, 0, finish_k);
  return lua_gettop(L);
}

static int
safe_rep(lua_State *L)
{
  size_t l, lsep;
  luaL_checklstring(L, 1, &l);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_optlstring(L, 3, "", &lsep);
  if (n > 0 && l + lsep == 0) { /* Lua would copy nothing n times: up to 2^63 turns of a loop */
    lua_pushliteral(L, "");
    return 1;
  }
  if (n > 0)
    check_steps(L, "string.rep", (double) n * (1 + (double) (l + lsep) / 64), "build the string in smaller pieces");
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* table.move(a1, f, e, t[, a2]): e - f + 1 turns; concat(list, sep, i, j):
 * j - i + 1; insert(t, pos, v): the #t - pos + 1 elements it shifts up,
 * remove(t[, pos]) the #t - pos it shifts down (an append or a pop costs
 * one step); sort(t): about #t log2 #t comparisons.  The real function is
 * upvalue 1.  Stricter than stock Lua, which takes anything with the
 * metamethods it uses: the first argument must be a table (a string's
 * __index would let table.move("", 1, 2^40, 1, {}) loop uncosted), and a
 * table whose __len could answer the real function otherwise than the
 * check (it is called again there) is refused by insert, remove and sort;
 * concat gets the length measured here as its j.  Other arguments of the
 * wrong type are left to the real function's messages. */
static int
safe_table(lua_State *L)
{
  const char *fn = lua_tostring(L, lua_upvalueindex(2));
  luaL_checktype(L, 1, LUA_TTABLE);
  gboolean has_len = luaL_getmetafield(L, 1, "__len") != LUA_TNIL;
  if (has_len)
    lua_pop(L, 1);
  int nargs = lua_gettop(L);
  double steps = 0;
  int ok2, ok3, ok4;
  double a2 = (double) lua_tointegerx(L, 2, &ok2), a3 = (double) lua_tointegerx(L, 3, &ok3);
  double a4 = (double) lua_tointegerx(L, 4, &ok4);
  if (strcmp(fn, "table.move") == 0) {
    if (ok2 && ok3 && a3 >= a2)
      steps = a3 - a2 + 1;
  } else if (strcmp(fn, "table.concat") == 0) {
    double i = ok3 ? a3 : 1, j = ok4 ? a4 : i;
    if (lua_isnoneornil(L, 4)) { /* #list, measured once: the real concat gets it as j */
      lua_Integer len = luaL_len(L, 1);
      lua_settop(L, MAX(nargs, 4));
      lua_pushinteger(L, len);
      lua_replace(L, 4);
      nargs = 4;
      j = (double) len;
    }
    steps = j >= i ? j - i + 1 : 0;
  } else {
    double n = (double) luaL_len(L, 1);
    /* a position out of range is the real function's error, at once */
    gboolean at = nargs >= 2 && ok2 && a2 >= 1 && a2 <= n + 1;
    if (strcmp(fn, "table.sort") == 0)
      steps = n * log2(n + 2);
    else if (strcmp(fn, "table.insert") == 0)
      steps = nargs == 3 && at ? n - a2 + 2 : 1;
    else /* table.remove */
      steps = at ? n - a2 + 1 : 1;
  }
  if (steps > 0)
    check_steps(L, fn, steps, "use a smaller range, or a loop in Lua");
  if (has_len && strcmp(fn, "table.move") != 0 && strcmp(fn, "table.concat") != 0)
    return luaL_error(L, "%s: a table with a __len metamethod is refused in the sandbox (the length it checks could "
                         "differ from the one the call then uses); use a plain table or a loop in Lua", fn);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_callk(L, nargs, LUA_MULTRET, 0, finish_k);
  return lua_gettop(L);
}

/* Replaces LIB.NAME with wrapper, whose upvalues are the real function and
 * "LIB.NAME" (string functions are also reached as ("x"):NAME through the
 * string metatable's __index, which is the same table). */
static void
wrap(lua_State *L, const char *lib, const char *name, lua_CFunction wrapper)
{
  lua_getglobal(L, lib);
  lua_getfield(L, -1, name);
  lua_pushfstring(L, "%s.%s", lib, name);
  lua_pushcclosure(L, wrapper, 2);
  lua_setfield(L, -2, name);
  lua_pop(L, 1);
}

/* package.searchers entry: Lua files under the host's folders only,
 * NAME.lua or NAME/init.lua with the dots of NAME as folder separators. */
static int
restricted_searcher(lua_State *L)
{
  SieveLuaHost *host = sieve__lua_host(L);
  const char *name = luaL_checkstring(L, 1);
  g_autofree char *rel = g_strdup(name);
  for (char *p = rel; *p; p++)
    if (*p == '.')
      *p = G_DIR_SEPARATOR;
  luaL_Buffer tried;
  luaL_buffinit(L, &tried);
  for (guint i = 0; i < host->require_dirs->len; i++) {
    const char *dir = host->require_dirs->pdata[i];
    for (int form = 0; form < 2; form++) {
      g_autofree char *file = form == 0 ? g_strconcat(rel, ".lua", NULL) : g_build_filename(rel, "init.lua", NULL);
      g_autofree char *path = g_build_filename(dir, file, NULL);
      if (g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        luaL_pushresult(&tried);
        lua_pop(L, 1);
        int status = sieve__lua_load_file(L, path, host->settings.allow & SIEVE_LUA_ALLOW_PACKAGE ? "bt" : "t");
        if (status != LUA_OK) {
          /* lua_error jumps over the g_autofree cleanups: free first. */
          lua_pushfstring(L, "error loading module '%s' from file '%s':\n\t%s", name, path, lua_tostring(L, -1));
          g_clear_pointer(&path, g_free);
          g_clear_pointer(&file, g_free);
          g_clear_pointer(&rel, g_free);
          luaL_where(L, 1);
          lua_insert(L, -2);
          lua_concat(L, 2);
          return lua_error(L);
        }
        if (!g_ptr_array_find_with_equal_func(host->required, path, g_str_equal, NULL))
          g_ptr_array_add(host->required, g_strdup(path));
        lua_pushstring(L, path);
        return 2;
      }
      luaL_addstring(&tried, "\n\tno file '");
      luaL_addstring(&tried, path);
      luaL_addstring(&tried, "'");
    }
  }
  luaL_addstring(&tried, "\n\t(sieve's sandbox searches only the script's folder, lua.path and the project's lua/)");
  luaL_pushresult(&tried);
  return 1;
}

static void
open_lib(lua_State *L, const char *name, lua_CFunction open)
{
  luaL_requiref(L, name, open, 1);
  lua_pop(L, 1);
}

static void
remove_field(lua_State *L, const char *table, const char *field)
{
  lua_getglobal(L, table);
  lua_pushnil(L);
  lua_setfield(L, -2, field);
  lua_pop(L, 1);
}

void
sieve__lua_sandbox_open(SieveLuaHost *host)
{
  lua_State *L = host->L;
  guint allow = host->settings.allow;
  open_lib(L, LUA_GNAME, luaopen_base);
  open_lib(L, LUA_LOADLIBNAME, luaopen_package);
  open_lib(L, LUA_COLIBNAME, luaopen_coroutine);
  open_lib(L, LUA_TABLIBNAME, luaopen_table);
  open_lib(L, LUA_STRLIBNAME, luaopen_string);
  open_lib(L, LUA_MATHLIBNAME, luaopen_math);
  open_lib(L, LUA_UTF8LIBNAME, luaopen_utf8);
  open_lib(L, LUA_OSLIBNAME, luaopen_os);
  if (allow & SIEVE_LUA_ALLOW_IO)
    open_lib(L, LUA_IOLIBNAME, luaopen_io);
  if (allow & SIEVE_LUA_ALLOW_DEBUG)
    open_lib(L, LUA_DBLIBNAME, luaopen_debug);

  if (!(allow & SIEVE_LUA_ALLOW_IO)) {
    lua_pushnil(L);
    lua_setglobal(L, "dofile");
    lua_pushnil(L);
    lua_setglobal(L, "loadfile");
  }
  lua_getglobal(L, "load");
  lua_pushcclosure(L, safe_load, 1);
  lua_setglobal(L, "load");
  lua_getglobal(L, "xpcall");
  lua_pushcclosure(L, safe_xpcall, 1);
  lua_setglobal(L, "xpcall");
  /* With debug a script can lift its own hook anyway: the wrappers only
   * hold where the limits do. */
  open_gc_sentinels(L);
  static const char *const patterns[] = {"find", "match", "gmatch", "gsub", NULL};
  for (guint i = 0; patterns[i]; i++)
    wrap(L, LUA_STRLIBNAME, patterns[i], safe_pattern);
  wrap(L, LUA_STRLIBNAME, "rep", safe_rep);
  static const char *const tables[] = {"move", "concat", "insert", "remove", "sort", NULL};
  for (guint i = 0; tables[i]; i++)
    wrap(L, LUA_TABLIBNAME, tables[i], safe_table);

  if (!(allow & SIEVE_LUA_ALLOW_OS)) {
    /* Keep only what reads the clock and formats dates. */
    static const char *const keep[] = {"clock", "time", "date", "difftime", NULL};
    lua_getglobal(L, LUA_OSLIBNAME);
    lua_newtable(L);
    for (guint i = 0; keep[i]; i++) {
      lua_getfield(L, -2, keep[i]);
      lua_setfield(L, -2, keep[i]);
    }
    lua_setglobal(L, LUA_OSLIBNAME);
    lua_pop(L, 1);
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getglobal(L, LUA_OSLIBNAME);
    lua_setfield(L, -2, LUA_OSLIBNAME);
    lua_pop(L, 1);
  }

  /* require: the preload searcher, then ours; C modules only when allowed. */
  lua_getglobal(L, LUA_LOADLIBNAME);
  int package = lua_gettop(L);
  lua_getfield(L, package, "searchers");
  int old = lua_gettop(L);
  lua_newtable(L);
  lua_rawgeti(L, old, 1); /* preload */
  lua_rawseti(L, -2, 1);
  lua_pushcfunction(L, restricted_searcher);
  lua_rawseti(L, -2, 2);
  if (allow & SIEVE_LUA_ALLOW_PACKAGE) {
    lua_rawgeti(L, old, 3); /* C modules on package.cpath */
    lua_rawseti(L, -2, 3);
    lua_rawgeti(L, old, 4);
    lua_rawseti(L, -2, 4);
  }
  lua_setfield(L, package, "searchers");
  lua_pop(L, 1); /* old searchers */
  /* package.path says where require looks (informative: our searcher reads
   * the host's list, so changing it does not widen the sandbox). */
  GString *path = g_string_new(NULL);
  for (guint i = 0; i < host->require_dirs->len; i++)
    g_string_append_printf(path, "%s%s/?.lua;%s/?/init.lua", i ? ";" : "", (char *) host->require_dirs->pdata[i],
                           (char *) host->require_dirs->pdata[i]);
  lua_pushstring(L, path->str);
  lua_setfield(L, package, "path");
  g_string_free(path, TRUE);
  if (!(allow & SIEVE_LUA_ALLOW_PACKAGE)) {
    lua_pushstring(L, "");
    lua_setfield(L, package, "cpath");
  }
  lua_pop(L, 1);
  if (!(allow & SIEVE_LUA_ALLOW_PACKAGE))
    remove_field(L, LUA_LOADLIBNAME, "loadlib");
}
