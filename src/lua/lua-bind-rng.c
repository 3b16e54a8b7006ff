/* sieve: binding (scripts call C): sieve.rng, the seeded random number
 * generator in Lua.
 *
 *   local rng = sieve.rng(42)
 *   rng:uniform()        -- [0, 1)
 *   rng:int(1, 6)        -- 1..6
 *   rng:choice(list)     -- one element
 *
 * Lua's own math.random is seeded from the clock at start-up; components
 * get an rng seeded by the study instead, so that a seed reproduces a
 * study and the rng's state is saved with theirs on every step.
 */
#include <math.h>
#include <string.h>

#include "lua/lua-private.h"

SieveRng *
sieve__lua_push_rng(lua_State *L, const SieveRng *init)
{
  SieveRng *rng = lua_newuserdatauv(L, sizeof(SieveRng), 0);
  *rng = *init;
  luaL_setmetatable(L, SIEVE_LUA_RNG);
  return rng;
}

SieveRng *
sieve__lua_check_rng(lua_State *L, int idx)
{
  return luaL_checkudata(L, idx, SIEVE_LUA_RNG);
}

static int
rng_new(lua_State *L)
{
  lua_Integer seed = luaL_checkinteger(L, 1);
  SieveRng rng;
  sieve_rng_seed(&rng, (guint64) seed);
  sieve__lua_push_rng(L, &rng);
  return 1;
}

/* Argument idx, a finite number (what a bound, mean or deviation is). */
static double
check_finite(lua_State *L, int idx)
{
  double x = luaL_checknumber(L, idx);
  luaL_argcheck(L, isfinite(x), idx, "expected a finite number");
  return x;
}

/* rng:uniform() in [0, 1), rng:uniform(a, b) in [a, b); one argument is
 * refused rather than ignored (math.random(m) means 1..m, not this). */
static int
rng_uniform(lua_State *L)
{
  SieveRng *rng = sieve__lua_check_rng(L, 1);
  int n = lua_gettop(L);
  if (n == 2 || n > 3)
    return luaL_argerror(L, n == 2 ? 2 : 4, "rng:uniform takes no argument ([0, 1)) or two (low, high)");
  double u;
  if (n == 3) {
    double a = check_finite(L, 2), b = check_finite(L, 3);
    luaL_argcheck(L, a <= b, 3, "expected low <= high");
    double r = sieve_rng_uniform(rng);
    /* b - a overflows for bounds of opposite signs near DBL_MAX: there the
     * convex combination, which stays finite (a + (b - a) r elsewhere, so
     * that seeded scripts draw what they drew).  Rounding may reach b. */
    u = isfinite(b - a) ? a + (b - a) * r : a * (1 - r) + b * r;
    if (u >= b && a < b)
      u = nextafter(b, a);
    if (u < a)
      u = a;
  } else
    u = sieve_rng_uniform(rng);
  lua_pushnumber(L, u);
  return 1;
}

static int
rng_below(lua_State *L)
{
  SieveRng *rng = sieve__lua_check_rng(L, 1);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n > 0, 2, "expected n > 0");
  lua_pushinteger(L, (lua_Integer) sieve_rng_below(rng, (guint64) n));
  return 1;
}

static int
rng_int(lua_State *L)
{
  SieveRng *rng = sieve__lua_check_rng(L, 1);
  lua_Integer lo = luaL_checkinteger(L, 2), hi = luaL_checkinteger(L, 3);
  luaL_argcheck(L, lo <= hi, 3, "expected low <= high");
  /* The width in unsigned arithmetic: hi - lo overflows a signed integer
   * past 2^63, and the whole 64-bit range has 2^64 values, one more than
   * a guint64 holds (then every 64-bit draw is one of them). */
  guint64 width = (guint64) hi - (guint64) lo;
  guint64 draw = width == G_MAXUINT64 ? sieve_rng_next(rng) : sieve_rng_below(rng, width + 1);
  lua_pushinteger(L, (lua_Integer) ((guint64) lo + draw));
  return 1;
}

static int
rng_normal(lua_State *L)
{
  SieveRng *rng = sieve__lua_check_rng(L, 1);
  double mean = lua_isnoneornil(L, 2) ? 0 : check_finite(L, 2), sd = lua_isnoneornil(L, 3) ? 1 : check_finite(L, 3);
  luaL_argcheck(L, sd >= 0, 3, "expected sd >= 0");
  lua_pushnumber(L, mean + sd * sieve_rng_normal(rng));
  return 1;
}

static int
rng_choice(lua_State *L)
{
  SieveRng *rng = sieve__lua_check_rng(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = (lua_Integer) lua_rawlen(L, 2);
  luaL_argcheck(L, n > 0, 2, "expected a non-empty list");
  lua_rawgeti(L, 2, 1 + (lua_Integer) sieve_rng_below(rng, (guint64) n));
  return 1;
}

/* Fisher-Yates, in place. */
static int
rng_shuffle(lua_State *L)
{
  SieveRng *rng = sieve__lua_check_rng(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  for (lua_Integer i = (lua_Integer) lua_rawlen(L, 2); i > 1; i--) {
    lua_Integer j = 1 + (lua_Integer) sieve_rng_below(rng, (guint64) i);
    lua_rawgeti(L, 2, i);
    lua_rawgeti(L, 2, j);
    lua_rawseti(L, 2, i);
    lua_rawseti(L, 2, j);
  }
  lua_settop(L, 2);
  return 1;
}

static int
rng_split(lua_State *L)
{
  SieveRng *rng = sieve__lua_check_rng(L, 1);
  SieveRng child;
  sieve_rng_split(rng, &child);
  sieve__lua_push_rng(L, &child);
  return 1;
}

static int
rng_copy(lua_State *L)
{
  sieve__lua_push_rng(L, sieve__lua_check_rng(L, 1));
  return 1;
}

static int
rng_eq(lua_State *L)
{
  SieveRng *a = luaL_testudata(L, 1, SIEVE_LUA_RNG), *b = luaL_testudata(L, 2, SIEVE_LUA_RNG);
  lua_pushboolean(L, a && b && memcmp(a->s, b->s, sizeof a->s) == 0);
  return 1;
}

static int
rng_tostring(lua_State *L)
{
  SieveRng *rng = sieve__lua_check_rng(L, 1);
  lua_pushfstring(L, "sieve.rng (%p)", (void *) rng);
  return 1;
}

static const luaL_Reg rng_methods[] = {
    {"uniform", rng_uniform}, {"below", rng_below}, {"int", rng_int},     {"normal", rng_normal},
    {"choice", rng_choice},   {"shuffle", rng_shuffle}, {"split", rng_split}, {"copy", rng_copy},
    {NULL, NULL},
};

static const luaL_Reg rng_metamethods[] = {
    {"__eq", rng_eq}, {"__tostring", rng_tostring}, {NULL, NULL},
};

void
sieve__lua_open_rng(lua_State *L, int sieve_idx)
{
  sieve__lua_new_class(L, SIEVE_LUA_RNG, rng_methods, rng_metamethods);
  lua_pushcfunction(L, rng_new);
  lua_setfield(L, sieve_idx, "rng");
}
