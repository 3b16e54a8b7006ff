/* The Lua host: errors with file:line and traceback, the sandbox, the
 * limits (and the host working on after them), Lua optimizers through the
 * C optimizer API. */
#include <math.h>

#include <glib/gstdio.h>
#include <string.h>

#include <sieve/sieve.h>

#include "lua/lua-private.h"
#include "test-support.h"

static SieveLuaHost *
new_host(const SieveLuaSettings *settings)
{
  GError *error = NULL;
  SieveLuaHost *host = sieve_lua_host_new(settings, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(host);
  return host;
}

/* Writes code to a temporary folder as name; returns its path. */
static char *
write_script(const char *dir, const char *name, const char *code)
{
  char *path = g_build_filename(dir, name, NULL);
  g_assert_true(g_file_set_contents(path, code, -1, NULL));
  return path;
}

static void
test_error_traceback(void)
{
  g_autofree char *dir = g_dir_make_tmp("sieve-lua-XXXXXX", NULL);
  g_autofree char *path = write_script(dir, "boom.lua",
                                       "local function inner(t)\n"
                                       "  return t.missing.field\n"
                                       "end\n"
                                       "local function outer() local v = inner({}) return v end\n"
                                       "outer()\n");
  g_autoptr(SieveLuaHost) host = new_host(NULL);
  GError *error = NULL;
  g_assert_false(sieve_lua_host_run_file(host, path, NULL, &error));
  g_assert_nonnull(error);
  g_autofree char *where = g_strdup_printf("%s:2: attempt to index a nil value (field 'missing')", path);
  g_assert_true(g_str_has_prefix(error->message, where));
  g_assert_nonnull(strstr(error->message, "stack traceback:"));
  g_autofree char *caller = g_strdup_printf("%s:4: in ", path);
  g_assert_nonnull(strstr(error->message, caller));
  g_autofree char *main_chunk = g_strdup_printf("%s:5: in main chunk", path);
  g_assert_nonnull(strstr(error->message, main_chunk));
  g_clear_error(&error);

  /* error() with a table, and a syntax error. */
  g_assert_false(sieve_lua_host_run_string(host, "error(setmetatable({}, {__tostring = function() return 'custom' end}))",
                                           "=(test)", &error));
  g_assert_true(g_str_has_prefix(error->message, "custom\nstack traceback:"));
  g_clear_error(&error);
  g_assert_false(sieve_lua_host_run_string(host, "error({})", "=(test)", &error));
  g_assert_true(g_str_has_prefix(error->message, "(error object is a table value)"));
  g_clear_error(&error);
  g_autofree char *bad = write_script(dir, "bad.lua", "local x = 1\nlocal y = = 2\n");
  g_assert_false(sieve_lua_host_run_file(host, bad, NULL, &error));
  g_autofree char *syntax = g_strdup_printf("%s:2: unexpected symbol near '='", bad);
  g_assert_cmpstr(error->message, ==, syntax);
  g_clear_error(&error);
  /* A binding's error names the script line that called it. */
  g_assert_false(sieve_lua_host_run_string(host, "\n\nsieve.space('nb20')", "@calls.lua", &error));
  g_assert_true(g_str_has_prefix(error->message, "calls.lua:3: no space plugin named 'nb20' (did you mean 'nb201'?)"));
  g_clear_error(&error);
  g_unlink(path);
  g_unlink(bad);
  g_rmdir(dir);
}

static void
test_sandbox_default(void)
{
  g_autoptr(SieveLuaHost) host = new_host(NULL);
  GError *error = NULL;
  g_assert_true(sieve_lua_host_run_string(host,
                                          "assert(os.execute == nil, 'os.execute')\n"
                                          "assert(os.remove == nil and os.exit == nil and os.getenv == nil)\n"
                                          "assert(type(os.time()) == 'number' and type(os.clock()) == 'number')\n"
                                          "assert(io == nil, 'io')\n"
                                          "assert(debug == nil, 'debug')\n"
                                          "assert(package.loadlib == nil, 'loadlib')\n"
                                          "assert(dofile == nil and loadfile == nil)\n"
                                          "assert(package.cpath == '')\n"
                                          "local f, err = load(string.dump(function() end))\n"
                                          "assert(f == nil and err:find('binary chunk'), err)\n"
                                          "assert(load('return 1')() == 1)\n"
                                          "local ok, why = pcall(require, 'socket')\n"
                                          "assert(not ok and why:find('sandbox searches only'), why)\n",
                                          "=(sandbox)", &error));
  g_assert_no_error(error);
  /* Calling the denied functions is an error a script sees with its line. */
  g_assert_false(sieve_lua_host_run_string(host, "\nos.execute('true')", "@deny.lua", &error));
  g_assert_true(g_str_has_prefix(error->message, "deny.lua:2: attempt to call a nil value (field 'execute')"));
  g_clear_error(&error);
  g_assert_false(sieve_lua_host_run_string(host, "io.open('/etc/passwd')", "@deny.lua", &error));
  g_assert_true(g_str_has_prefix(error->message, "deny.lua:1: attempt to index a nil value (global 'io')"));
  g_clear_error(&error);
}

static void
test_sandbox_allowed(void)
{
  g_autofree char *dir = g_dir_make_tmp("sieve-lua-XXXXXX", NULL);
  g_autofree char *file = g_build_filename(dir, "out.txt", NULL);
  SieveLuaSettings settings;
  sieve_lua_settings_init(&settings);
  const char *const words[] = {"io", "os", NULL};
  GError *error = NULL;
  g_assert_true(sieve_lua_allow_parse(words, &settings.allow, &error));
  g_autoptr(SieveLuaHost) host = new_host(&settings);
  g_autofree char *code = g_strdup_printf("local f = assert(io.open('%s', 'w'))\n"
                                          "f:write('written by lua') f:close()\n"
                                          "assert(os.execute('true') == true)\n"
                                          "assert(debug == nil)\n",
                                          file);
  g_assert_true(sieve_lua_host_run_string(host, code, "=(allowed)", &error));
  g_assert_no_error(error);
  g_autofree char *contents = NULL;
  g_assert_true(g_file_get_contents(file, &contents, NULL, NULL));
  g_assert_cmpstr(contents, ==, "written by lua");
  g_unlink(file);
  g_rmdir(dir);

  const char *const wrong[] = {"oss", NULL};
  guint bits;
  g_assert_false(sieve_lua_allow_parse(wrong, &bits, &error));
  g_assert_cmpstr(error->message, ==, "cannot allow 'oss' (did you mean 'os'?): expected some of io, os, debug, package, command, plugins");
  g_clear_error(&error);
}

static void
test_instruction_limit(void)
{
  SieveLuaSettings settings;
  sieve_lua_settings_init(&settings);
  settings.instructions = 5000000;
  g_autoptr(SieveLuaHost) host = new_host(&settings);
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time();
  g_assert_false(sieve_lua_host_run_string(host, "local n = 0\nwhile true do n = n + 1 end", "@loop.lua", &error));
  g_assert_true(g_str_has_prefix(error->message, "loop.lua:2: instruction limit exceeded: more than 5000000 instructions"));
  g_assert_nonnull(strstr(error->message, "stack traceback:"));
  g_clear_error(&error);
  /* A script cannot catch its way past the limit. */
  g_assert_false(sieve_lua_host_run_string(
      host, "while true do pcall(function() while true do end end) end", "@swallow.lua", &error));
  g_assert_nonnull(strstr(error->message, "instruction limit exceeded"));
  g_clear_error(&error);
  /* Nor loop in xpcall's handler, which the hook's error calls with hooks
   * off, nor in a __gc, which Lua runs with hooks off, nor catch the error
   * and return as if done. */
  g_assert_false(sieve_lua_host_run_string(
      host, "while true do xpcall(function() while true do end end, function() while true do end end) end",
      "@handler.lua", &error));
  g_assert_true(g_str_has_prefix(error->message, "handler.lua:1: instruction limit exceeded"));
  g_clear_error(&error);
  g_assert_false(sieve_lua_host_run_string(
      host, "setmetatable({}, {__gc = function() while true do end end}) collectgarbage()", "@gc.lua", &error));
  g_assert_true(g_str_has_prefix(error->message, "gc.lua: instruction limit exceeded"));
  g_clear_error(&error);
  g_assert_false(sieve_lua_host_run_string(host, "pcall(function() while true do end end) return", "@caught.lua",
                                           &error));
  g_assert_true(g_str_has_prefix(error->message, "caught.lua:1: instruction limit exceeded"));
  g_clear_error(&error);
  g_assert_cmpint(g_get_monotonic_time() - t0, <, 10 * G_USEC_PER_SEC);
  /* The host works on, with a fresh allowance per call. */
  for (int i = 0; i < 3; i++) {
    g_assert_true(sieve_lua_host_run_string(host, "local s = 0 for i = 1, 100000 do s = s + i end assert(s > 0)",
                                            "=(after)", &error));
    g_assert_no_error(error);
  }
}

static void
test_time_limit(void)
{
  SieveLuaSettings settings;
  sieve_lua_settings_init(&settings);
  settings.seconds = 0.2;
  g_autoptr(SieveLuaHost) host = new_host(&settings);
  GError *error = NULL;
  gint64 t0 = g_get_monotonic_time();
  g_assert_false(sieve_lua_host_run_string(host, "while true do end", "@spin.lua", &error));
  double took = (g_get_monotonic_time() - t0) / 1e6;
  g_assert_true(g_str_has_prefix(error->message, "spin.lua:1: time limit exceeded: more than 0.2 seconds"));
  g_assert_cmpfloat(took, >=, 0.19);
  g_assert_cmpfloat(took, <, 3.0);
  g_clear_error(&error);
  g_assert_true(sieve_lua_host_run_string(host, "x = 1", "=(after)", &error));
  g_assert_no_error(error);
}

/* The table functions whose loops run over a range the script names (or a
 * __len it defines) in one C call: refused up front under a limit, where
 * they would run for hours (the hook cannot stop a C call), and unchanged
 * on ordinary tables. */
static void
test_table_limits(void)
{
  SieveLuaSettings settings;
  sieve_lua_settings_init(&settings);
  settings.seconds = 0.5;
  g_autoptr(SieveLuaHost) host = new_host(&settings);
  static const struct {
    const char *code, *fn;
  } calls[] = {
      {"table.move({}, 1, 2^40, 1, {})", "table.move"},
      {"table.concat(setmetatable({}, {__index = tostring}), '', 1, 2^40)", "table.concat"},
      {"table.concat(setmetatable({}, {__index = tostring, __len = function() return 2^40 end}))", "table.concat"},
      {"table.insert(setmetatable({}, {__len = function() return 2^40 end}), 1, 0)", "table.insert"},
      {"table.remove(setmetatable({}, {__len = function() return 2^40 end}), 1)", "table.remove"},
      {"table.sort(setmetatable({}, {__index = tostring, __len = function() return 2^30 end}))", "table.sort"},
      /* a __len asked again by the real function: 1 for the check, then 2^27 */
      {"local n = 0 local t = setmetatable({}, {__index = {}, __len = function() n = n + 1 return n == 1 and 1 or 2^27 end})\n"
       "table.insert(t, 1, 'x')",
       "table.insert"},
      {"local n = 0 local t = setmetatable({}, {__index = {}, __len = function() n = n + 1 return n == 1 and 1 or 2^27 end})\n"
       "table.remove(t, 1)",
       "table.remove"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(calls); i++) {
    GError *error = NULL;
    gint64 t0 = g_get_monotonic_time();
    g_assert_false(sieve_lua_host_run_string(host, calls[i].code, "@range.lua", &error));
    g_autofree char *want = g_strdup_printf("range.lua:1: %s: this call could run for about", calls[i].fn);
    g_autofree char *want2 = g_strdup_printf("range.lua:2: %s: a table with a __len metamethod is refused", calls[i].fn);
    if (!g_str_has_prefix(error->message, want) && !g_str_has_prefix(error->message, want2))
      g_error("%s: %s", calls[i].code, error->message);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 2 * G_USEC_PER_SEC);
    g_clear_error(&error);
  }
  GError *error = NULL;
  g_assert_true(sieve_lua_host_run_string(host,
                                          "local t = {5, 3, 4}\n"
                                          "table.insert(t, 1, 9) table.insert(t, 1) assert(table.remove(t, 2) == 5)\n"
                                          "table.sort(t) assert(table.concat(t, ',') == '1,3,4,9')\n"
                                          "assert(table.concat(table.move(t, 2, 3, 1, {}), ',', 1, 2) == '3,4')\n"
                                          "table.sort(t, function(a, b) return a > b end) assert(t[1] == 9)\n"
                                          "local l = setmetatable({}, {__len = function() return 3 end, __index = function(_, i) return i end})\n"
                                          "assert(table.concat(l, ',') == '1,2,3')",
                                          "=(ordinary)", &error));
  g_assert_no_error(error);

  /* A first argument that is not a table is refused: a string's __index
   * made table.move("", 1, 2^40, 1, {}) an uncosted loop of hours. */
  static const char *const not_tables[] = {
      "table.move('', 1, 2^40, 1, {})", "table.concat('', '', 1, 2^40)", "table.insert('', 1)",
      "table.remove('', 1)",            "table.sort('')",
  };
  for (guint i = 0; i < G_N_ELEMENTS(not_tables); i++) {
    gint64 t0 = g_get_monotonic_time();
    g_assert_false(sieve_lua_host_run_string(host, not_tables[i], "@str.lua", &error));
    if (!g_str_has_prefix(error->message, "str.lua:1: bad argument #1 to") || !strstr(error->message, "table expected, got string"))
      g_error("%s: %s", not_tables[i], error->message);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 2 * G_USEC_PER_SEC);
    g_clear_error(&error);
  }
}

/* An append, a pop and a removal near the end do the work of the elements
 * they shift, not of the whole table: under a limit below a 2e6-element
 * table's length they pass, an insert at its front does not.  (The table
 * is filled by doubling table.move calls, each under the limit.) */
static void
test_table_cheap_calls(void)
{
  SieveLuaSettings settings;
  sieve_lua_settings_init(&settings);
  settings.instructions = 1500000;
  g_autoptr(SieveLuaHost) host = new_host(&settings);
  GError *error = NULL;
  g_assert_true(sieve_lua_host_run_string(host,
                                          "t = {1} while 2 * #t <= 2e6 do table.move(t, 1, #t, #t + 1) end\n"
                                          "table.move(t, 1, 2e6 - #t, #t + 1) assert(#t == 2e6)\n"
                                          "table.insert(t, 'a') table.insert(t, #t + 1, 'b') assert(#t == 2e6 + 2)\n"
                                          "assert(table.remove(t) == 'b') assert(table.remove(t, #t) == 'a')\n"
                                          "table.insert(t, #t, 'c') assert(t[#t - 1] == 'c' and #t == 2e6 + 1)\n"
                                          "assert(table.remove(t, #t - 1) == 'c' and #t == 2e6)",
                                          "@cheap.lua", &error));
  g_assert_no_error(error);
  g_assert_false(sieve_lua_host_run_string(host, "table.insert(t, 1, 0)", "@front.lua", &error));
  g_assert_true(g_str_has_prefix(error->message, "front.lua:1: table.insert: this call could run for about 2e+06 steps"));
  g_clear_error(&error);
}

/* A __gc a script reaches (with the debug library: getmetatable of sieve's
 * objects gives their class name) while the object's call runs leaves it
 * alone: it was a use after free of the candidates, evaluator, space or
 * optimizer that call holds. */
static void
test_gc_while_busy(void)
{
  SieveLuaSettings settings;
  sieve_lua_settings_init(&settings);
  settings.allow |= SIEVE_LUA_ALLOW_DEBUG;
  g_autoptr(SieveLuaHost) host = new_host(&settings);
  g_autofree char *code = g_strdup_printf(
      "local space = sieve.space('hpo', {file = '%s/search_spaces/branin.yaml'})\n"
      "assert(getmetatable(space) == 'sieve.space')\n"
      "local study, ev, opt, hook\n"
      "local function gc(o) debug.getmetatable(o).__gc(o) end\n"
      "sieve.register_evaluator{name = 'gc', evaluate = function(self, c)\n"
      "  if hook then hook() end\n"
      "  return {metrics = {value = c.genotype:get('x1')}}\n"
      "end}\n"
      "sieve.register_optimizer{name = 'gc', ask = function(self, n)\n"
      "  if hook then hook() end\n"
      "  return {self.space:sample(self.rng)}\n"
      "end}\n"
      "ev = sieve.evaluator('gc', space, {})\n"
      "study = sieve.study{space = space, optimizer = 'random', evaluator = ev, objective = {metric = 'value'}, seed = 1}\n"
      "opt = sieve.optimizer('gc', space)\n"
      "assert(getmetatable(study) == 'sieve.study' and getmetatable(ev) == 'sieve.evaluator')\n"
      "hook = function() gc(study) gc(ev) gc(space) end\n"
      "assert(study:run(2) == 2)\n"
      "hook = function() gc(ev) gc(space) end\n"
      "assert(ev:evaluate(space:sample(sieve.rng(1))))\n"
      "hook = function() gc(opt) gc(space) end\n"
      "assert(#opt:ask(1) == 1)\n"
      "hook = nil\n"
      "assert(study:run(1) == 1 and #opt:ask(1) == 1 and study:count() == 3)\n",
      g_getenv("SIEVE_SOURCE_ROOT"));
  GError *error = NULL;
  gboolean ok = sieve_lua_host_run_string(host, code, "@gc.lua", &error);
  g_assert_no_error(error);
  g_assert_true(ok);
}

static void
test_memory_limit(void)
{
  SieveLuaSettings settings;
  sieve_lua_settings_init(&settings);
  settings.memory = 32u << 20;
  g_autoptr(SieveLuaHost) host = new_host(&settings);
  GError *error = NULL;
  /* A runaway table, then a runaway string. */
  g_assert_false(sieve_lua_host_run_string(host, "local t = {} for i = 1, 1e9 do t[i] = ('x'):rep(64) .. i end",
                                           "@hog.lua", &error));
  g_assert_nonnull(strstr(error->message, "memory limit exceeded: the Lua state needed more than 32 MiB"));
  g_clear_error(&error);
  guint64 peak = 0, now = sieve_lua_host_memory(host, &peak);
  g_assert_cmpuint(peak, <=, 32u << 20);
  g_assert_cmpuint(now, <, 4u << 20); /* collected after the error */
  g_assert_false(sieve_lua_host_run_string(host, "local s = ('x'):rep(1 << 30)", "@big.lua", &error));
  g_assert_nonnull(strstr(error->message, "memory limit exceeded"));
  g_clear_error(&error);
  /* The host works on: the API and ordinary allocations. */
  g_assert_true(sieve_lua_host_run_string(host,
                                          "local t = {} for i = 1, 10000 do t[i] = i end\n"
                                          "local g = sieve.space('nb201'):sample(sieve.rng(1))\n"
                                          "assert(#g:format() > 0)",
                                          "=(after)", &error));
  g_assert_no_error(error);
}

/* A Lua optimizer through the C API: deterministic for a seed, and a copy
 * restored from its saved state proposes what the original proposes. */
static void
test_lua_optimizer_save_load(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  GError *error = NULL;
  g_autoptr(SieveLuaHost) host = sieve_lua_host_new(NULL, registry, &error);
  g_assert_no_error(error);
  g_assert_true(sieve_lua_host_run_string(host,
                                          "sieve.register_optimizer{name = 'walk', options = {step = 1},\n"
                                          "  create = function(self) self.state.n = 0 self.state.last = nil end,\n"
                                          "  ask = function(self, n)\n"
                                          "    local out = {}\n"
                                          "    for i = 1, n do\n"
                                          "      local g = self.state.last and self.state.last:copy() or self.space:sample(self.rng)\n"
                                          "      local d = self.space:decisions()[self.rng:int(1, #self.space)]\n"
                                          "      g:set(d.index, self.rng:choice(d.choices))\n"
                                          "      out[i] = g\n"
                                          "    end\n"
                                          "    return out\n"
                                          "  end,\n"
                                          "  tell = function(self, t) self.state.n = self.state.n + 1 self.state.last = t.genotype end}\n",
                                          "@walk.lua", &error));
  g_assert_no_error(error);
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "walk");
  g_assert_nonnull(c);
  g_assert_cmpstr(sieve_component_get_path(c), ==, "walk.lua");
  const SieveComponent *nb201 = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201");
  /* The space's defaults: its option table with nothing set. */
  g_autoptr(SieveOptions) space_options =
    sieve_options_new(sieve_component_get_info(nb201)->options, NULL, NULL, NULL, "test", &error);
  g_assert_no_error(error);
  g_autoptr(SieveSpace) space = sieve_space_new(nb201, space_options, &error);
  g_assert_no_error(error);
  const char *names[] = {"acc", NULL};
  SieveStudyInfo study = {.seed = 11, .n_objectives = 1, .objective_names = names};
  g_autoptr(SieveOptions) options = sieve_options_new(sieve_component_get_info(c)->options, NULL, NULL, NULL, "walk", &error);
  g_autoptr(SieveOptimizer) a = sieve_optimizer_new(c, space, options, &study, &error);
  g_assert_no_error(error);
  study.seed = 12;
  g_autoptr(SieveOptimizer) b = sieve_optimizer_new(c, space, options, &study, &error);
  g_assert_no_error(error);
  for (int round = 0; round < 20; round++) {
    g_autoptr(GPtrArray) asked = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
    g_assert_true(sieve_optimizer_ask(a, 2, asked, &error));
    g_assert_cmpuint(asked->len, ==, 2);
    g_autoptr(SieveResult) r = sieve_result_new();
    double objective = round;
    g_assert_true(sieve_optimizer_tell(a, asked->pdata[1], r, &objective, &error));
    /* b follows a through a's saved state alone */
    g_autoptr(GVariant) state = sieve_optimizer_save(a, &error);
    g_assert_no_error(error);
    g_assert_true(sieve_optimizer_load(b, state, &error));
    g_autoptr(GPtrArray) from_a = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
    g_autoptr(GPtrArray) from_b = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
    g_assert_true(sieve_optimizer_ask(a, 1, from_a, &error));
    g_assert_true(sieve_optimizer_ask(b, 1, from_b, &error));
    g_assert_cmpstr(sieve_candidate_get_text(from_a->pdata[0]), ==, sieve_candidate_get_text(from_b->pdata[0]));
    g_assert_no_error(error);
  }
  /* A Lua error inside ask is a GError naming the component and the line. */
  g_assert_true(sieve_lua_host_run_string(host,
                                          "sieve.register_optimizer{name = 'broken', ask = function(self, n)\n"
                                          "  return self.nothing.here end}",
                                          "@broken.lua", &error));
  const SieveComponent *broken = sieve_registry_lookup(registry, SIEVE_KIND_OPTIMIZER, "broken");
  g_autoptr(SieveOptions) none = sieve_options_new(sieve_component_get_info(broken)->options, NULL, NULL, NULL, "b", &error);
  g_autoptr(SieveOptimizer) o = sieve_optimizer_new(broken, space, none, &study, &error);
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  g_assert_false(sieve_optimizer_ask(o, 1, out, &error));
  g_assert_true(g_str_has_prefix(error->message, "optimizer 'broken': ask(): broken.lua:2: attempt to index"));
  g_clear_error(&error);
}

/* A space from its component and YAML text for its options. (transfer full) */
static SieveSpace *
open_space(SieveRegistry *registry, const char *name, const char *yaml)
{
  GError *error = NULL;
  const SieveComponent *c = sieve_registry_lookup(registry, SIEVE_KIND_SPACE, name);
  g_assert_nonnull(c);
  g_autoptr(SieveNode) node = sieve_node_parse_string(yaml, -1, "test.yaml", &error);
  g_assert_no_error(error);
  g_autoptr(SieveOptions) options =
    sieve_options_new(sieve_component_get_info(c)->options, node, NULL, NULL, name, &error);
  g_assert_no_error(error);
  SieveSpace *space = sieve_space_new(c, options, &error);
  g_assert_no_error(error);
  return space;
}

/* Every one of the 15,625 cells: the Lua space (search_spaces/nb201.lua,
 * through the engine's calls) builds the C plugin's network and gets its
 * hashes, both when the script registers it by name and through the
 * builtin `lua` space. */
static void
test_lua_space_build_nb201(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  GError *error = NULL;
  g_autoptr(SieveLuaHost) host = sieve_lua_host_new(NULL, registry, &error);
  g_assert_no_error(error);
  g_autofree char *script = g_build_filename(g_getenv("SIEVE_SOURCE_ROOT"), "search_spaces", "nb201.lua", NULL);
  g_assert_true(sieve_lua_host_run_file(host, script, NULL, &error));
  g_assert_no_error(error);
  const char *small = "{C: 8, N: 1, in_channels: 1, size: 28}";
  g_autoptr(SieveSpace) c = open_space(registry, "nb201", small);
  g_autoptr(SieveSpace) named = open_space(registry, "lua_nb201", small);
  g_autofree char *yaml = g_strdup_printf("{script: '%s', options: %s}", script, small);
  g_autoptr(SieveSpace) builtin = open_space(registry, "lua", yaml);
  g_assert_true(sieve_space_can_build(named));
  g_assert_true(sieve_space_can_build(builtin));
  /* The same probe scale as the C plugin's, or the functional hashes part. */
  const SieveSpaceClass *c_class = sieve_component_get_info(sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "nb201"))->klass;
  const SieveSpaceClass *l_class =
    sieve_component_get_info(sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "lua_nb201"))->klass;
  g_assert_true(g_strv_equal((const char *const *) c_class->probe_options, (const char *const *) l_class->probe_options));

  SieveSpace *lua_spaces[] = {named, builtin};
  for (guint arch = 0; arch < 15625; arch++) {
    g_autoptr(SieveGenotype) g = sieve_genotype_new(c);
    for (guint e = 0, k = arch; e < 6; e++, k /= 5)
      sieve_genotype_set(g, e, k % 5);
    g_autoptr(SieveGraph) want = sieve_space_build(c, g, &error);
    g_assert_no_error(error);
    g_autofree char *want_dump = sieve_graph_dump(want);
    g_autofree char *text = sieve_space_format(c, g);
    /* Every eighth cell through both Lua paths, the rest through one: the
     * builtin runs the same script in a state of its own. */
    for (guint s = 0; s < (arch % 8 == 0 ? 2u : 1u); s++) {
      g_autoptr(SieveGenotype) lg = sieve_space_parse(lua_spaces[s], text, &error);
      g_assert_no_error(error);
      g_autoptr(SieveGraph) got = sieve_space_build(lua_spaces[s], lg, &error);
      g_assert_no_error(error);
      g_assert_cmpuint(sieve_graph_params(got), ==, sieve_graph_params(want));
      g_assert_cmpuint(sieve_graph_macs(got), ==, sieve_graph_macs(want));
      g_autofree char *got_dump = sieve_graph_dump(got);
      g_assert_cmpstr(got_dump, ==, want_dump);
      /* The hashes through sieve_space_hash: the functional one builds at
       * each space's probe scale, which for the builtin `lua` space is the
       * script's `probe` one level down (options.C=4 ...). */
      if (arch % 8 == 0 || arch % 125 == 0) {
        SieveHashKind kind = arch % 125 == 0 ? SIEVE_HASH_FUNCTIONAL : SIEVE_HASH_STRUCTURAL;
        SieveHash hc, hl;
        g_assert_true(sieve_space_hash(c, g, kind, &hc, &error));
        g_assert_no_error(error);
        g_assert_true(sieve_space_hash(lua_spaces[s], lg, kind, &hl, &error));
        g_assert_no_error(error);
        g_assert_true(sieve_hash_equal(&hc, &hl));
      }
    }
  }
}

/* A space's `probe` table becomes its class's probe_options, sorted, and a
 * space without build() has a class without it. */
static void
test_lua_space_class(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  GError *error = NULL;
  g_autoptr(SieveLuaHost) host = sieve_lua_host_new(NULL, registry, &error);
  g_assert_no_error(error);
  g_assert_true(sieve_lua_host_run_string(host,
                                          "local function net(self, g)\n"
                                          "  local n = sieve.graph.new('p') return n:finish(n:input(1, 1, 1)) end\n"
                                          "sieve.register_space{name = 'probed', options = {width = 16, depth = 4, tag = 'x'},\n"
                                          "  probe = {width = 2, depth = 1, tag = 'small'},\n"
                                          "  create = function(self, b) b:int('k', 1, 2) end, build = net,\n"
                                          "  format = function(self, g) return tostring(g:get('k')) end,\n"
                                          "  parse = function(self, t) return {k = tonumber(t)} end}\n"
                                          "sieve.register_space{name = 'plain', create = function(self, b) b:int('k', 1, 2) end}\n",
                                          "@probe.lua", &error));
  g_assert_no_error(error);
  const SieveSpaceClass *probed =
    sieve_component_get_info(sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "probed"))->klass;
  g_assert_nonnull(probed->probe_options);
  g_assert_cmpstr(probed->probe_options[0], ==, "depth=1");
  /* KEY=VALUE, the value YAML (sieve_node_set_path): a string quoted. */
  g_assert_cmpstr(probed->probe_options[1], ==, "tag=\"small\"");
  g_assert_cmpstr(probed->probe_options[2], ==, "width=2");
  g_assert_null(probed->probe_options[3]);
  g_assert_nonnull(probed->build);
  g_assert_nonnull(probed->format);
  g_autoptr(SieveSpace) space = open_space(registry, "probed", "{width: 8}");
  g_assert_true(sieve_space_can_build(space));
  const SieveSpaceClass *plain =
    sieve_component_get_info(sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "plain"))->klass;
  g_assert_null(plain->build);
  g_assert_null(plain->probe_options);
  g_autoptr(SieveSpace) flat = open_space(registry, "plain", "{}");
  g_assert_false(sieve_space_can_build(flat));
}

typedef struct {
  SieveSpace *space;
  SieveGenotype *genotype;
  GError *error;
  SieveGraph *graph;
} BuildJob;

static gpointer
build_in_thread(gpointer data)
{
  BuildJob *job = data;
  job->graph = sieve_space_build(job->space, job->genotype, &job->error);
  return NULL;
}

/* A Lua state runs on one thread: a build from another thread (a concurrent
 * evaluator) is refused with a clear error, and the space works on after. */
static void
test_lua_space_other_thread(void)
{
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  GError *error = NULL;
  g_autoptr(SieveLuaHost) host = sieve_lua_host_new(NULL, registry, &error);
  g_assert_no_error(error);
  g_assert_true(sieve_lua_host_run_string(host,
                                          "sieve.register_space{name = 'one', create = function(self, b)\n"
                                          "  b:int('width', 1, 4) end,\n"
                                          "  build = function(self, g)\n"
                                          "    local n = sieve.graph.new('one')\n"
                                          "    local x = n:input(1, 4, 4)\n"
                                          "    return n:finish(n:conv2d(x, {out = g:get('width'), kernel = 1}))\n"
                                          "  end}\n",
                                          "@one.lua", &error));
  g_assert_no_error(error);
  g_autoptr(SieveSpace) space = open_space(registry, "one", "{}");
  /* No probe field: the class says to hash at the space's own scale. */
  const SieveSpaceClass *klass = sieve_component_get_info(sieve_registry_lookup(registry, SIEVE_KIND_SPACE, "one"))->klass;
  g_assert_null(klass->probe_options);
  g_assert_nonnull(klass->build);
  g_assert_null(klass->format);
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, "width=3", &error);
  g_assert_no_error(error);
  BuildJob job = {space, g, NULL, NULL};
  g_thread_join(g_thread_new("builder", build_in_thread, &job));
  g_assert_null(job.graph);
  g_assert_error(job.error, SIEVE_ERROR, SIEVE_ERROR_FAILED);
  g_assert_nonnull(strstr(job.error->message, "space 'one', build(): called from another thread"));
  g_clear_error(&job.error);
  g_autoptr(SieveGraph) graph = sieve_space_build(space, g, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(sieve_graph_params(graph), ==, 3);
}

/* The builtin Lua components' `sieve plugins --describe` examples work as
 * written (they were {plugin: lua, script: ...}); the evaluator's script,
 * examples/lua/branin.lua, gives Branin's minimum 0.397887 at (pi, 2.275)
 * (Dixon & Szego 1978). */
static void
test_lua_examples(void)
{
  sieve_lua_register_static(); /* before the registry loads the static plugins */
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  sieve_registry_load_default(registry, NULL, NULL);
  GError *error = NULL;
  g_autoptr(SieveLuaHost) host = sieve_lua_host_new(NULL, registry, &error);
  g_assert_no_error(error);
  const SieveComponentKind kinds[] = {SIEVE_KIND_SPACE, SIEVE_KIND_OPTIMIZER, SIEVE_KIND_EVALUATOR};
  for (guint k = 0; k < G_N_ELEMENTS(kinds); k++)
    test_component_example(registry, sieve_registry_lookup(registry, kinds[k], "lua"));

  const char *root = g_getenv("SIEVE_SOURCE_ROOT");
  g_autoptr(SieveSpace) branin = test_space_new(registry, "hpo", "{file: search_spaces/branin.yaml}", root);
  g_autoptr(SieveEvaluator) e = test_evaluator_new(registry, "lua", branin, "{script: examples/lua/branin.lua}", root);
  g_autoptr(SieveGenotype) g = sieve_genotype_new(branin);
  sieve_genotype_set(g, 0, G_PI);
  sieve_genotype_set(g, 1, 2.275);
  g_autoptr(SieveCandidate) c = sieve_candidate_new(g_steal_pointer(&g), NAN);
  g_autoptr(SieveResult) r = sieve_evaluator_evaluate(e, c, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat_with_epsilon(test_metric(r, "value"), 0.397887, 1e-6);
  g_assert_cmpfloat_with_epsilon(test_metric(r, "regret"), 0, 1e-6);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/lua/error-traceback", test_error_traceback);
  g_test_add_func("/lua/sandbox-default", test_sandbox_default);
  g_test_add_func("/lua/sandbox-allowed", test_sandbox_allowed);
  g_test_add_func("/lua/instruction-limit", test_instruction_limit);
  g_test_add_func("/lua/time-limit", test_time_limit);
  g_test_add_func("/lua/table-limits", test_table_limits);
  g_test_add_func("/lua/table-cheap-calls", test_table_cheap_calls);
  g_test_add_func("/lua/gc-while-busy", test_gc_while_busy);
  g_test_add_func("/lua/memory-limit", test_memory_limit);
  g_test_add_func("/lua/optimizer-save-load", test_lua_optimizer_save_load);
  g_test_add_func("/lua/space-build-nb201", test_lua_space_build_nb201);
  g_test_add_func("/lua/space-other-thread", test_lua_space_other_thread);
  g_test_add_func("/lua/space-class", test_lua_space_class);
  g_test_add_func("/lua/examples", test_lua_examples);
  return g_test_run();
}
