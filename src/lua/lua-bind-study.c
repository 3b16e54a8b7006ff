/* sieve: binding (scripts call C): sieve.study and sieve.run, studies from
 * Lua: a live ask/tell loop over a store, and whole YAML experiments run
 * with overrides.
 *
 *   local study = sieve.study{space = space, optimizer = {plugin = "random"},
 *                             evaluator = ev, objective = {metric = "value", direction = "minimize"},
 *                             seed = 1, store = "branin.sieve"}      -- store optional (a temporary one)
 *   local t = study:ask()                    -- {number, genotype, text, fidelity}
 *   study:tell(t, study:evaluate(t))         -- or any result; study:evaluate keeps what c.report reports
 *   study:run(50)                            -- ask, evaluate, tell, 50 times
 *
 *   -- with pruner = {kind = "median", ...} (the YAML `pruner:`), an Optuna-style loop:
 *   for epoch = 1, 10 do
 *     if not study:report(t, epoch, train_one_epoch()) then study:tell(t, "pruned") break end
 *   end
 *   print(study:best().metrics.value)
 *   for t in study:trials() do ... end
 *
 *   local done = sieve.run("configs/nb201-random.yaml",
 *                          {set = {["budget.evaluations"] = 50}, store = "x.sieve"})
 *
 * A live study keeps the durability rules of the engine: each ask is stored
 * as a pending trial with the optimizer's state, each tell as the finished
 * trial with the state after it, one transaction each; a study opened on a
 * store that already holds trials continues from its saved optimizer state
 * and hands out its pending trials first.  A study with a pruner judges a
 * trial's intermediate values (study:report, or c.report in an evaluation
 * by study:run or study:evaluate) against the trials that finished OK, by
 * the engine's rules (core/pruner.c): an evaluation it stops is told as
 * pruned whatever it returns, as under `sieve run`; a script that reports
 * itself decides, telling "pruned" (Optuna's TrialState.PRUNED) or a
 * result.  What sieve.run returns is the
 * same userdata over the finished store, read-only (best, trials, count),
 * with a space built as the run's was, so that its trials have genotypes.
 */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "engine/engine-private.h"
#include "lua/lua-private.h"

/* A trial asked and not told yet: its candidate, the intermediate values
 * reported for it and the pruner's verdict on them. */
typedef struct _StudyBox StudyBox;

typedef struct {
  StudyBox *box;            /* its study */
  SieveCandidate *candidate;
  GArray *intermediate;     /* SieveIntermediate, by step */
  SievePrunerCurve *curve;  /* its verdicts so far, NULL before the first */
  gboolean should_prune;    /* the last verdict */
  gboolean evaluating;      /* study:run or study:evaluate is evaluating it */
  gboolean evaluated;       /* study:evaluate evaluated it: its values are the evaluation's */
  gboolean stopped;         /* its evaluation was told to stop: it is the pruned trial, whatever it returns */
} Flight;

struct _StudyBox {
  SieveStore *store;
  char *tmp_dir;              /* a temporary store's folder, removed on close */
  SieveOptimizer *optimizer;  /* NULL for a finished (read-only) study */
  SieveOptions *options;      /* the optimizer's, as long as it lives (plugins may borrow from them) */
  SievePruner *pruner;        /* NULL: none */
  SieveOptions *pruner_options; /* its options (the study's key) */
  SieveFidelity fidelity;     /* its evaluations' (the evaluator's, or the script's), name owned; name NULL: none */
  SieveLuaObjectives objectives;
  GHashTable *in_flight;      /* trial number -> Flight* asked, not told */
  GQueue pending;             /* SieveCandidate* stored pending before this session */
  /* Its calls on the stack: the script's callbacks (the evaluator's and a
   * Lua optimizer's methods) may call back into the study, which refuses
   * what would free or re-enter what those calls hold. */
  guint running;              /* run, ask, tell or evaluate on the stack: close is refused, and a second run */
  gboolean in_optimizer;      /* inside the optimizer's ask, tell, save or load: ask and tell are refused too */
  gboolean warned_repeat;     /* said once: a trial reported a step again */
  gboolean warned_silent;     /* said once: a trial finished OK without a value for the pruner */
  gint64 run_trial;           /* the trial run is evaluating (it tells it), -1 */
  /* A finished study's: its experiment (its components, and the Lua hosts
   * that registered them, live as long as it does) and a space of it that
   * the space userdata at user value 1 borrows (closed with the study). */
  SieveExperiment *exp;
  SieveSpace *space;
};

/* The fidelity of the study's evaluations (what a report may reach), NULL: none. */
static const SieveFidelity *
study_fidelity(const StudyBox *box)
{
  return box->fidelity.name != NULL ? &box->fidelity : NULL;
}

static void
flight_free(Flight *f)
{
  sieve_candidate_free(f->candidate);
  g_array_unref(f->intermediate);
  sieve_pruner_curve_free(f->curve);
  g_free(f);
}

/* user values: 1 space, 2 evaluator (nil) */

/* The study at 1. */
static void
study_close(lua_State *L, StudyBox *box)
{
  if (box->space != NULL) {
    /* Genotypes the script still holds see a closed space, not a freed one. */
    lua_getiuservalue(L, 1, 1);
    if (luaL_testudata(L, -1, SIEVE_LUA_SPACE))
      sieve__lua_invalidate_space(L, -1);
    lua_pop(L, 1);
    g_clear_pointer(&box->space, sieve_space_free);
  }
  g_clear_pointer(&box->optimizer, sieve_optimizer_free);
  g_clear_pointer(&box->options, sieve_options_free);
  g_clear_pointer(&box->in_flight, g_hash_table_unref); /* before the pruner its flights borrow */
  g_clear_pointer(&box->pruner, sieve_pruner_free);
  g_clear_pointer(&box->pruner_options, sieve_options_free);
  g_clear_pointer((char **) &box->fidelity.name, g_free);
  g_queue_clear_full(&box->pending, (GDestroyNotify) sieve_candidate_free);
  if (box->store != NULL) {
    g_autofree char *path = g_strdup(sieve_store_get_path(box->store));
    g_clear_pointer(&box->store, sieve_store_close);
    if (box->tmp_dir != NULL) {
      static const char *const suffixes[] = {"", "-wal", "-shm", "-lock"};
      for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree char *file = g_strconcat(path, suffixes[i], NULL);
        g_unlink(file);
      }
    }
  }
  if (box->tmp_dir != NULL)
    g_rmdir(box->tmp_dir);
  g_clear_pointer(&box->tmp_dir, g_free);
  sieve__lua_objectives_clear(&box->objectives);
  g_clear_pointer(&box->exp, sieve_experiment_free); /* after the space: its component may live in it */
}

/* A real collection cannot happen while one of its calls runs (the call
 * holds it); a __gc reached some other way then leaves it alone. */
static int
study_gc(lua_State *L)
{
  StudyBox *box = luaL_checkudata(L, 1, SIEVE_LUA_STUDY);
  if (box->running == 0 && !box->in_optimizer)
    study_close(L, box);
  return 0;
}

static StudyBox *
check_study(lua_State *L, int idx, gboolean live)
{
  StudyBox *box = luaL_checkudata(L, idx, SIEVE_LUA_STUDY);
  if (box->store == NULL)
    luaL_error(L, "this study is closed");
  if (live && box->optimizer == NULL)
    luaL_error(L, "this study is finished (read-only): it can list its trials but not ask or tell");
  if (live) {
    lua_getiuservalue(L, idx, 1);
    sieve__lua_check_space(L, -1);
    lua_pop(L, 1);
  }
  if (live && box->in_optimizer)
    luaL_error(L, "this study's optimizer is running (its ask, tell, save or load called back into the study): a study cannot "
                  "ask, tell or run from inside its own optimizer");
  return box;
}

/* Around a call of the study at 1 that runs the script's callbacks: the
 * study and its space cannot be closed meanwhile. */
static void
study_enter(lua_State *L, StudyBox *box, int delta)
{
  sieve__lua_space_busy(L, 1, delta);
  box->running += delta;
}

static StudyBox *
push_study(lua_State *L)
{
  StudyBox *box = lua_newuserdatauv(L, sizeof(StudyBox), 2);
  memset(box, 0, sizeof *box);
  g_queue_init(&box->pending);
  box->run_trial = -1;
  luaL_setmetatable(L, SIEVE_LUA_STUDY);
  return box;
}

/* ---- trials as Lua tables -------------------------------------------------- */

/* {number, text, status, fidelity, reason, cost, metrics, objective, genotype
 * (when a space is at space_idx and the text parses)} */
static void
push_trial(lua_State *L, StudyBox *box, const SieveTrial *t, int space_idx)
{
  lua_newtable(L);
  lua_pushinteger(L, t->number);
  lua_setfield(L, -2, "number");
  lua_pushstring(L, t->genotype);
  lua_setfield(L, -2, "text");
  lua_pushstring(L, sieve_status_to_string(t->status));
  lua_setfield(L, -2, "status");
  if (!isnan(t->fidelity)) {
    lua_pushnumber(L, t->fidelity);
    lua_setfield(L, -2, "fidelity");
  }
  lua_pushstring(L, t->reason);
  lua_setfield(L, -2, "reason");
  lua_pushnumber(L, sieve_result_get_cost(t->result));
  lua_setfield(L, -2, "cost");
  sieve__lua_push_metrics(L, t->result);
  lua_setfield(L, -2, "metrics");
  double v;
  /* A cached trial's metrics are a measured result too (the report's rule). */
  if (box->objectives.n > 0 && (t->status == SIEVE_STATUS_OK || t->status == SIEVE_STATUS_CACHED) &&
      sieve_result_get_metric(t->result, box->objectives.metrics[0], &v)) {
    lua_pushnumber(L, v);
    lua_setfield(L, -2, "objective");
  }
  /* Every objective's value, in order, in a study of several (nil where missing). */
  if (box->objectives.n > 1 && (t->status == SIEVE_STATUS_OK || t->status == SIEVE_STATUS_CACHED)) {
    lua_createtable(L, (int) box->objectives.n, 0);
    for (guint k = 0; k < box->objectives.n; k++)
      if (sieve_result_get_metric(t->result, box->objectives.metrics[k], &v)) {
        lua_pushnumber(L, v);
        lua_rawseti(L, -2, (lua_Integer) k + 1);
      }
    lua_setfield(L, -2, "objectives");
  }
  if (space_idx != 0) {
    SieveGenotype *g = sieve_space_parse(sieve__lua_check_space(L, space_idx), t->genotype, NULL);
    if (g != NULL) {
      sieve__lua_push_genotype(L, space_idx, g);
      lua_setfield(L, -2, "genotype");
    }
  }
}

/* The stored trials of the study at 1 (transfer full), and its space at 2
 * when it has one (*space_idx, else 0); raises on a store error. */
static GPtrArray *
check_trials(lua_State *L, StudyBox **box, int *space_idx)
{
  *box = check_study(L, 1, FALSE);
  lua_settop(L, 1);
  lua_getiuservalue(L, 1, 1);
  *space_idx = luaL_testudata(L, 2, SIEVE_LUA_SPACE) ? 2 : 0;
  GError *error = NULL;
  GPtrArray *trials = sieve_store_list_trials((*box)->store, FALSE, &error);
  if (trials == NULL)
    sieve__lua_error_gerror(L, error);
  return trials;
}

static int
study_best(lua_State *L)
{
  StudyBox *box = check_study(L, 1, FALSE);
  /* No single best among several objectives: as Optuna's best_trial
   * refuses, pointing at the front. */
  if (box->objectives.n > 1)
    return luaL_error(L, "study:best(): this study has %d objectives, and no single trial is best among them: "
                         "study:best_trials() gives the Pareto front",
                      (int) box->objectives.n);
  int space_idx;
  GPtrArray *trials = check_trials(L, &box, &space_idx);
  /* The best at the highest fidelity reached, as the summary ranks. */
  g_autoptr(GArray) ranked = sieve_trials_rank(trials, box->objectives.metrics[0], box->objectives.maximize[0], NULL);
  const SieveTrial *best = ranked->len > 0 ? trials->pdata[g_array_index(ranked, guint, 0)] : NULL;
  if (best == NULL)
    lua_pushnil(L);
  else
    push_trial(L, box, best, space_idx);
  g_ptr_array_unref(trials);
  return 1;
}

/* study:best_trials(): the non-dominated trials over the study's
 * objectives, sorted by the first, best first (the front sieve run prints;
 * with one objective, the best trials, ties included). */
static int
study_best_trials(lua_State *L)
{
  StudyBox *box;
  int space_idx;
  GPtrArray *trials = check_trials(L, &box, &space_idx);
  g_autoptr(GArray) front = sieve_trials_pareto_front(trials, (const char *const *) box->objectives.metrics,
                                                      box->objectives.maximize, box->objectives.n);
  lua_createtable(L, (int) front->len, 0);
  for (guint i = 0; i < front->len; i++) {
    push_trial(L, box, trials->pdata[g_array_index(front, guint, i)], space_idx);
    lua_rawseti(L, -2, (lua_Integer) i + 1);
  }
  g_ptr_array_unref(trials);
  return 1;
}

static int
study_count(lua_State *L)
{
  StudyBox *box = check_study(L, 1, FALSE);
  SieveStatus status = SIEVE_STATUS_PENDING;
  gint wanted = -1;
  if (!lua_isnoneornil(L, 2)) {
    if (!sieve_status_from_string(luaL_checkstring(L, 2), &status))
      return luaL_error(L, "unknown status '%s' (pending, ok, failed, screened, cached, pruned, rejected)", lua_tostring(L, 2));
    wanted = (gint) status;
  }
  GError *error = NULL;
  gint64 n = sieve_store_count_trials(box->store, wanted, &error);
  if (n < 0)
    return sieve__lua_error_gerror(L, error);
  lua_pushinteger(L, n);
  return 1;
}

/* study:intermediate([number]): the intermediate values of one trial (or of
 * every trial), {trial =, step =, fidelity = (nil: none), value =} by trial
 * then step. */
static int
study_intermediate(lua_State *L)
{
  StudyBox *box = check_study(L, 1, FALSE);
  lua_Integer number = luaL_optinteger(L, 2, -1);
  /* -1 is the store's "every trial": a negative number written is a mistake, not that. */
  luaL_argcheck(L, lua_isnoneornil(L, 2) || number >= 0, 2, "a trial number is >= 0 (omit it for every trial)");
  GError *error = NULL;
  g_autoptr(GArray) values = sieve_store_list_intermediate(box->store, number, &error);
  if (values == NULL)
    return sieve__lua_error_gerror(L, error);
  lua_createtable(L, (int) values->len, 0);
  for (guint i = 0; i < values->len; i++) {
    const SieveIntermediate *v = &g_array_index(values, SieveIntermediate, i);
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, v->trial);
    lua_setfield(L, -2, "trial");
    lua_pushinteger(L, v->step);
    lua_setfield(L, -2, "step");
    if (!isnan(v->fidelity)) {
      lua_pushnumber(L, v->fidelity);
      lua_setfield(L, -2, "fidelity");
    }
    lua_pushnumber(L, v->value);
    lua_setfield(L, -2, "value");
    lua_rawseti(L, -2, (lua_Integer) i + 1);
  }
  return 1;
}

/* for t in study:trials() do ... end: a snapshot of the stored trials. */
static int
trials_next(lua_State *L)
{
  lua_Integer i = lua_tointeger(L, lua_upvalueindex(2)) + 1;
  lua_pushinteger(L, i);
  lua_replace(L, lua_upvalueindex(2));
  lua_rawgeti(L, lua_upvalueindex(1), i);
  return 1;
}

static int
study_trials(lua_State *L)
{
  StudyBox *box;
  int space_idx;
  GPtrArray *trials = check_trials(L, &box, &space_idx);
  lua_createtable(L, (int) trials->len, 0);
  int list = lua_gettop(L);
  for (guint i = 0; i < trials->len; i++) {
    push_trial(L, box, trials->pdata[i], space_idx);
    lua_rawseti(L, list, (lua_Integer) i + 1);
  }
  g_ptr_array_unref(trials);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, trials_next, 2);
  return 1;
}

/* ---- the live loop ------------------------------------------------------------ */

/* A Lua optimizer's save runs inside the store's transaction: a call back
 * into the study from there (a tell, which begins one) is refused as from
 * its ask or tell. */
static gboolean
save_optimizer(StudyBox *box, GError **error)
{
  box->in_optimizer = TRUE;
  g_autoptr(GVariant) state = sieve_optimizer_save(box->optimizer, error);
  box->in_optimizer = FALSE;
  return state != NULL && sieve_store_save_state(box->store, "optimizer", state, error);
}

/* Asks for one candidate and stores it pending with the state; NULL and no
 * error when the optimizer has nothing to propose (see sieve/optimizer.h). */
static SieveCandidate *
ask_one(StudyBox *box, GError **error)
{
  if (!g_queue_is_empty(&box->pending))
    return g_queue_pop_head(&box->pending);
  g_autoptr(GPtrArray) asked = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_candidate_free);
  box->in_optimizer = TRUE;
  gboolean ok = sieve_optimizer_ask(box->optimizer, 1, asked, error);
  box->in_optimizer = FALSE;
  if (!ok)
    return NULL;
  if (asked->len == 0)
    return NULL;
  SieveCandidate *c = asked->pdata[0];
  if (!sieve_store_begin(box->store, error))
    return NULL;
  gint64 number = sieve_store_add_trial(box->store, sieve_candidate_get_text(c), sieve_candidate_get_fidelity(c), error);
  if (number < 0 || !save_optimizer(box, error) || !sieve_store_commit(box->store, error)) {
    sieve_store_rollback(box->store);
    return NULL;
  }
  sieve_candidate_set_trial(c, number);
  return g_ptr_array_steal_index(asked, 0);
}

void
sieve__lua_push_candidate(lua_State *L, const SieveCandidate *c, int space_idx)
{
  space_idx = lua_absindex(L, space_idx);
  lua_newtable(L);
  lua_pushinteger(L, sieve_candidate_get_trial(c));
  lua_setfield(L, -2, "number");
  lua_pushstring(L, sieve_candidate_get_text(c));
  lua_setfield(L, -2, "text");
  if (!isnan(sieve_candidate_get_fidelity(c))) {
    lua_pushnumber(L, sieve_candidate_get_fidelity(c));
    lua_setfield(L, -2, "fidelity");
  }
  sieve__lua_push_genotype(L, space_idx, sieve_genotype_copy(sieve_candidate_get_genotype(c)));
  lua_setfield(L, -2, "genotype");
}

/* The in-flight trial a study call names (a trial table or its number, at
 * idx), or a Lua error saying why it is none. */
static Flight *
check_flight(lua_State *L, StudyBox *box, int idx, const char *call)
{
  if (lua_istable(L, idx))
    lua_getfield(L, idx, "number");
  else
    lua_pushvalue(L, idx);
  int whole = 0;
  lua_Integer number = lua_tointegerx(L, -1, &whole);
  if (!whole && lua_type(L, -1) == LUA_TNUMBER)
    luaL_error(L, "study:%s: a trial number is a whole number, got %f", call, lua_tonumber(L, -1));
  if (!whole)
    luaL_error(L, "study:%s needs a trial (the table study:ask returned) or its number, got %s %s", call,
               lua_istable(L, idx) ? "a trial whose number is" : "a", luaL_typename(L, -1));
  lua_pop(L, 1);
  /* (numbers are gint keys: one out of range was never asked) */
  Flight *f = number < 0 || number > G_MAXINT ? NULL
                                              : g_hash_table_lookup(box->in_flight, GINT_TO_POINTER((gint) number));
  if (f == NULL)
    luaL_error(L, "trial %I was not asked in this session, or is already told", number);
  return f;
}

static void
flight_add(StudyBox *box, SieveCandidate *c)
{
  Flight *f = g_new0(Flight, 1);
  f->box = box;
  f->candidate = c;
  f->intermediate = g_array_new(FALSE, FALSE, sizeof(SieveIntermediate));
  g_hash_table_insert(box->in_flight, GINT_TO_POINTER((gint) sieve_candidate_get_trial(c)), f);
}

/* An intermediate value of an in-flight trial: kept by step (a repeated
 * step keeps its first value, as the engine keeps them) and judged by the
 * pruner against the trials that finished OK so far.  Returns whether the
 * trial should go on. */
static gboolean
flight_report(Flight *f, gint64 step, double fidelity, double value)
{
  SieveIntermediate v = {.trial = sieve_candidate_get_trial(f->candidate), .step = step, .fidelity = fidelity,
                         .value = value};
  guint changed = sieve_engine_keep_intermediate(f->intermediate, &v);
  StudyBox *box = f->box;
  if (changed == f->intermediate->len && !box->warned_repeat) {
    box->warned_repeat = TRUE;
    g_autofree char *text = sieve_engine_repeated_step_text(v.trial, step);
    g_printerr("sieve: warning: %s\n", text);
  }
  if (box->pruner == NULL)
    return TRUE;
  if (f->curve == NULL)
    f->curve = sieve_pruner_curve_new(G_MAXINT64);
  f->should_prune = sieve_pruner_judge_curve(box->pruner, f->curve, (const SieveIntermediate *) f->intermediate->data,
                                             f->intermediate->len, changed);
  return !f->should_prune;
}

/* c.report during an evaluation by study:run or study:evaluate: once the
 * pruner stops it, what it reports after is not kept (as under sieve run:
 * the pruned trial is what the pruner judged). */
static gboolean
on_intermediate(gpointer user_data, const SieveCandidate *candidate, gint64 step, double fidelity, double value)
{
  Flight *f = user_data;
  if (f->stopped)
    return FALSE;
  if (!flight_report(f, step, fidelity, value))
    f->stopped = TRUE;
  return !f->stopped;
}

static int
study_ask(lua_State *L)
{
  StudyBox *box = check_study(L, 1, TRUE);
  GError *error = NULL;
  study_enter(L, box, +1);
  SieveCandidate *c = ask_one(box, &error);
  study_enter(L, box, -1);
  if (c == NULL) {
    if (error != NULL)
      return sieve__lua_error_gerror(L, error);
    lua_pushnil(L); /* nothing now: none left, or none before a pending trial is told */
    return 1;
  }
  flight_add(box, c);
  lua_getiuservalue(L, 1, 1);
  sieve__lua_push_candidate(L, c, lua_gettop(L));
  return 1;
}

/* Evaluates an in-flight trial with the study's evaluator at ev_idx: its
 * number reaches the evaluator, what it reports is kept with the trial and
 * judged by the pruner.  An evaluation the pruner stopped that then raised
 * (as an Optuna objective raises TrialPruned) is the pruned trial, an empty
 * result that cost its seconds; a stopped evaluation's result is the
 * pruned trial's, whatever the evaluator returned.  (transfer full) */
static SieveResult *
flight_evaluate(lua_State *L, int ev_idx, Flight *f, GError **error)
{
  sieve_candidate_set_intermediate_func(f->candidate, on_intermediate, f);
  f->evaluating = TRUE;
  gint64 start = g_get_monotonic_time();
  SieveResult *result = sieve__lua_evaluator_run(L, ev_idx, f->candidate, error);
  double seconds = (g_get_monotonic_time() - start) / 1e6;
  f->evaluating = FALSE;
  f->evaluated = TRUE;
  sieve_candidate_set_intermediate_func(f->candidate, NULL, NULL);
  if (result == NULL && f->stopped && f->intermediate->len > 0) {
    g_clear_error(error);
    result = sieve_result_new();
    sieve_result_set_cost(result, seconds);
  }
  if (result != NULL && f->stopped && f->intermediate->len > 0)
    sieve_engine_mark_pruned(result, f->box->objectives.metrics[0],
                             &g_array_index(f->intermediate, SieveIntermediate, f->intermediate->len - 1));
  return result;
}

/* Stores a told trial with the intermediate values reported for it and
 * tells the optimizer, in one transaction.  A trial whose evaluation the
 * pruner stopped, or told_pruned ("pruned"), is the pruned trial at its last value
 * (with the fidelity it reached, within the study's); an
 * OK result goes through the engine's rule first: an objective that is not
 * a finite number, or missing, fails the trial with the reason.  An OK
 * trial becomes a reference curve of the pruner once stored. */
static gboolean
tell_one(StudyBox *box, Flight *f, SieveResult *result, gboolean told_pruned, double started, GError **error)
{
  const SieveFidelity *range = study_fidelity(box);
  const SieveIntermediate *last = f->intermediate->len == 0
                                      ? NULL
                                      : &g_array_index(f->intermediate, SieveIntermediate, f->intermediate->len - 1);
  if (last != NULL && (f->stopped || told_pruned))
    sieve_engine_mark_pruned(result, box->objectives.metrics[0], last);
  else if (told_pruned)
    sieve_result_set_reason(result, "pruned by the script before it reported a value");
  sieve_engine_check_objectives(result, (const char *const *) box->objectives.metrics, box->objectives.n, NULL);
  double told[box->objectives.n];
  sieve__lua_orient(&box->objectives, result, told);
  if (!sieve_store_begin(box->store, error))
    return FALSE;
  SieveCandidate *c = f->candidate;
  gint64 number = sieve_candidate_get_trial(c);
  gboolean ok = last == NULL || sieve_store_set_intermediate(box->store, number,
                                                             (const SieveIntermediate *) f->intermediate->data,
                                                             f->intermediate->len, error);
  /* A pruned trial counts as an evaluation of the fidelity it reached (the
   * engine's rule: one the evaluator could have reached). */
  if (ok && last != NULL && sieve_result_get_status(result) == SIEVE_STATUS_PRUNED && isfinite(last->fidelity) &&
      last->fidelity >= 0 && (range == NULL || last->fidelity <= range->max))
    ok = sieve_store_set_trial_fidelity(box->store, number, last->fidelity, error);
  ok = ok && sieve_store_finish_trial(box->store, number, result, started, g_get_real_time() / 1e6, 0, -1, error);
  if (ok) {
    box->in_optimizer = TRUE;
    ok = sieve_optimizer_tell(box->optimizer, c, result, told, error);
    box->in_optimizer = FALSE;
  }
  if (!ok || !save_optimizer(box, error) || !sieve_store_commit(box->store, error)) {
    sieve_store_rollback(box->store);
    return FALSE;
  }
  if (box->pruner != NULL && sieve_result_get_status(result) == SIEVE_STATUS_OK) {
    sieve_pruner_add_completed(box->pruner, (const SieveIntermediate *) f->intermediate->data, f->intermediate->len);
    /* A pruner that never gets a value judges nothing: said once, as sieve run says it. */
    if (last == NULL && !box->warned_silent) {
      box->warned_silent = TRUE;
      g_autofree char *text = sieve_engine_silent_trial_text(number);
      g_printerr("sieve: warning: %s\n", text);
    }
  }
  return TRUE;
}


/* study:tell(trial or number, result or "pruned") */
static int
study_tell(lua_State *L)
{
  StudyBox *box = check_study(L, 1, TRUE);
  Flight *f = check_flight(L, box, 2, "tell");
  gint64 number = sieve_candidate_get_trial(f->candidate);
  if (f->evaluating)
    return luaL_error(L, number == box->run_trial
                             ? "trial %I is being evaluated by study:run, which tells it when its evaluation returns"
                             : "trial %I is being evaluated by study:evaluate: tell it the result that returns",
                      (lua_Integer) number);
  GError *error = NULL;
  SieveResult *result;
  gboolean told_pruned = lua_type(L, 3) == LUA_TSTRING;
  if (told_pruned) {
    if (strcmp(lua_tostring(L, 3), "pruned") != 0)
      return luaL_error(L, "study:tell takes a result ({metrics = {...}}, sieve.result{...}) or \"pruned\", got the "
                           "string '%s'",
                        lua_tostring(L, 3));
    result = sieve_result_new();
    sieve_result_set_status(result, SIEVE_STATUS_PRUNED);
  } else if ((result = sieve__lua_to_result(L, 3, &error)) == NULL)
    return sieve__lua_error_gerror(L, error);
  study_enter(L, box, +1);
  gboolean ok = tell_one(box, f, result, told_pruned, g_get_real_time() / 1e6, &error);
  study_enter(L, box, -1);
  sieve_result_free(result);
  if (!ok)
    return sieve__lua_error_gerror(L, error);
  g_hash_table_remove(box->in_flight, GINT_TO_POINTER((gint) number));
  return 0;
}

/* study:report(trial or number, step, value [, fidelity]) -> continue: an
 * intermediate value of a trial the script evaluates itself (Optuna's
 * trial.report then trial.should_prune, in one call); false when the
 * study's pruner would stop it. */
static int
study_report(lua_State *L)
{
  StudyBox *box = check_study(L, 1, TRUE);
  Flight *f = check_flight(L, box, 2, "report");
  if (f->evaluating)
    return luaL_error(L, "trial %I is being evaluated by the study's evaluator, which reports with c.report",
                      (lua_Integer) sieve_candidate_get_trial(f->candidate));
  if (f->evaluated)
    return luaL_error(L, "trial %I was evaluated by study:evaluate, and its values are the evaluation's: tell it the "
                         "result",
                      (lua_Integer) sieve_candidate_get_trial(f->candidate));
  gint64 step;
  double value, fidelity;
  sieve__lua_check_report(L, 3, study_fidelity(box), &step, &value, &fidelity);
  lua_pushboolean(L, flight_report(f, step, fidelity, value));
  return 1;
}

/* study:should_prune(trial or number): the pruner's verdict on the values
 * reported so far, judged again against the trials finished by now (as
 * Optuna's trial.should_prune); false without a pruner or before any
 * report. */
static int
study_should_prune(lua_State *L)
{
  StudyBox *box = check_study(L, 1, TRUE);
  Flight *f = check_flight(L, box, 2, "should_prune");
  if (f->curve != NULL && f->intermediate->len > 0 && !f->stopped)
    f->should_prune = sieve_pruner_judge_curve(box->pruner, f->curve, (const SieveIntermediate *) f->intermediate->data,
                                               f->intermediate->len, f->intermediate->len);
  lua_pushboolean(L, f->should_prune);
  return 1;
}

/* The study's evaluator, pushed, or a Lua error naming the call. */
static void
push_study_evaluator(lua_State *L, const char *call)
{
  lua_getiuservalue(L, 1, 2);
  if (!luaL_testudata(L, -1, SIEVE_LUA_EVALUATOR))
    luaL_error(L, "study:%s needs the study's evaluator (sieve.study{evaluator = ...})", call);
}

/* study:evaluate(trial or number) -> result: the study's evaluator on an
 * asked trial, what it reports kept with the trial and judged by the pruner;
 * study:tell stores them (a stopped evaluation as the pruned trial). */
static int
study_evaluate(lua_State *L)
{
  StudyBox *box = check_study(L, 1, TRUE);
  Flight *f = check_flight(L, box, 2, "evaluate");
  if (box->running > 0)
    return luaL_error(L, "study:evaluate called while this study is running (from its evaluator or optimizer): its "
                         "evaluator evaluates one trial at a time");
  if (f->evaluated || f->intermediate->len > 0)
    return luaL_error(L, "trial %I has been evaluated or reported already: tell it",
                      (lua_Integer) sieve_candidate_get_trial(f->candidate));
  lua_settop(L, 2);
  push_study_evaluator(L, "evaluate");
  GError *error = NULL;
  study_enter(L, box, +1);
  SieveResult *result = flight_evaluate(L, 3, f, &error);
  study_enter(L, box, -1);
  if (result == NULL)
    return sieve__lua_error_gerror(L, error);
  sieve__lua_push_result(L, result);
  return 1;
}

/* study:run(n): n rounds of ask, evaluate (the study's evaluator), tell.
 * Returns how many trials finished (fewer when the optimizer ran out).
 * The evaluator gets the study's candidate: its trial number, and the
 * intermediate values it reports go into the store with the trial. */
static int
study_run(lua_State *L)
{
  StudyBox *box = check_study(L, 1, TRUE);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 0, 2, "expected a number of trials >= 0");
  if (box->running > 0)
    return luaL_error(L, "study:run called while this study is running (from its evaluator or optimizer): a study "
                         "runs one loop at a time");
  lua_settop(L, 2);
  push_study_evaluator(L, "run");
  /* No raise from here to study_enter(-1): errors are GErrors. */
  study_enter(L, box, +1);
  lua_Integer done = 0;
  GError *error = NULL;
  for (; done < n; done++) {
    SieveCandidate *c = ask_one(box, &error);
    if (c == NULL)
      break;
    gint64 number = sieve_candidate_get_trial(c);
    flight_add(box, c);
    Flight *f = g_hash_table_lookup(box->in_flight, GINT_TO_POINTER((gint) number));
    double started = g_get_real_time() / 1e6;
    box->run_trial = number;
    SieveResult *result = flight_evaluate(L, 3, f, &error);
    box->run_trial = -1;
    gboolean ok = result != NULL && tell_one(box, f, result, FALSE, started, &error);
    g_clear_pointer(&result, sieve_result_free);
    if (!ok)
      break;
    g_hash_table_remove(box->in_flight, GINT_TO_POINTER((gint) number));
  }
  study_enter(L, box, -1);
  if (error != NULL)
    return sieve__lua_error_gerror(L, error);
  lua_pushinteger(L, done);
  return 1;
}

/* study:close() and __close; refused while one of its calls runs (the
 * store, optimizer and trials it holds are in use). */
static int
study_close_method(lua_State *L)
{
  StudyBox *box = luaL_checkudata(L, 1, SIEVE_LUA_STUDY);
  if (box->running > 0)
    return luaL_error(L, "the study is running (study:run, ask, tell or evaluate is on the stack): close it after that "
                         "call returns");
  study_close(L, box);
  return 0;
}

static int
study_path(lua_State *L)
{
  StudyBox *box = check_study(L, 1, FALSE);
  lua_pushstring(L, box->tmp_dir ? NULL : sieve_store_get_path(box->store));
  return 1;
}

/* ---- sieve.study{...} ------------------------------------------------------------- */

/* Reopens what a store holds: the optimizer's state and the pending trials. */
static gboolean
study_resume(StudyBox *box, SieveSpace *space, GError **error)
{
  box->in_optimizer = TRUE;
  gboolean loaded = sieve_engine_restore_optimizer(box->optimizer, box->store, error);
  box->in_optimizer = FALSE;
  if (!loaded)
    return FALSE;
  /* The pruner judges against the trials earlier sessions finished OK too. */
  if (box->pruner != NULL && !sieve_engine_restore_pruner(box->pruner, box->store, error))
    return FALSE;
  g_autoptr(GPtrArray) pending = sieve_store_list_trials(box->store, TRUE, error);
  if (pending == NULL)
    return FALSE;
  for (guint i = 0; i < pending->len; i++) {
    SieveTrial *t = pending->pdata[i];
    SieveGenotype *g = sieve_space_parse(space, t->genotype, error);
    if (g == NULL)
      return FALSE;
    SieveCandidate *c = sieve_candidate_new(g, t->fidelity);
    sieve_candidate_set_trial(c, t->number);
    g_queue_push_tail(&box->pending, c);
  }
  return TRUE;
}

static gboolean
study_setup(StudyBox *box, SieveLuaHost *host, SieveSpace *space, const char *store_path, const char *name,
            const char *opt_name, lua_Integer seed, const SieveOptions *options, GError **error)
{
  const SieveComponent *c = sieve_registry_require(host->registry, SIEVE_KIND_OPTIMIZER, opt_name, NULL, error);
  if (c == NULL)
    return FALSE;
  SieveStudyInfo info = {
      .seed = (guint64) seed,
      .n_objectives = box->objectives.n,
      .objective_names = (const char *const *) box->objectives.metrics,
      .fidelity = box->fidelity.name != NULL ? &box->fidelity : NULL,
  };
  box->optimizer = sieve_optimizer_new(c, space, options, &info, error);
  if (box->optimizer == NULL)
    return FALSE;
  box->in_flight = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify) flight_free);
  g_autofree char *path = NULL;
  if (store_path == NULL) {
    box->tmp_dir = g_dir_make_tmp("sieve-study-XXXXXX", error);
    if (box->tmp_dir == NULL)
      return FALSE;
    path = g_build_filename(box->tmp_dir, "study.sieve", NULL);
  } else
    path = sieve_store_canonical_name(store_path);
  box->store = sieve_store_open(path, SIEVE_STORE_WRITE, error);
  if (box->store == NULL)
    return FALSE;
  GError *local = NULL;
  g_autofree char *stored_name = sieve_store_get_meta(box->store, "name", &local);
  if (local != NULL) { /* not a new store that has no name yet, but one that could not be read */
    g_propagate_error(error, local);
    return FALSE;
  }
  SieveLuaStudyKey k = {.objectives = &box->objectives, .optimizer = opt_name, .optimizer_options = options,
                        .seed = (gint64) seed, .space = space, .pruner = box->pruner_options,
                        .fidelity = box->fidelity.name != NULL ? &box->fidelity : NULL};
  g_autofree char *key = sieve__lua_study_key(&k);
  if (stored_name == NULL) {
    g_autofree char *seed_text = g_strdup_printf("%" G_GINT64_FORMAT, (gint64) seed);
    if (!sieve_store_begin(box->store, error))
      return FALSE;
    if (!sieve_store_set_meta(box->store, "name", name, error) ||
        !sieve_store_set_meta(box->store, "seed", seed_text, error) ||
        !sieve_store_set_meta(box->store, "objective", box->objectives.metrics[0], error) ||
        !sieve_store_set_meta(box->store, "direction", box->objectives.maximize[0] ? "maximize" : "minimize", error) ||
        !sieve_store_set_meta(box->store, "lua_study_key", key, error) || !sieve_store_commit(box->store, error)) {
      sieve_store_rollback(box->store);
      return FALSE;
    }
    return TRUE;
  }
  /* The same study, or a refusal that names what differs, before anything
   * of it is read (a store from before the key: its objective at least, and
   * it gets the key). */
  g_autofree char *stored_key = sieve_store_get_meta(box->store, "lua_study_key", &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  if (stored_key != NULL)
    return sieve__lua_study_key_check(stored_key, key, store_path, error) && study_resume(box, space, error);
  /* A study of sieve run: its config defines it, which a script does not
   * repeat; it goes on through sieve.run(config, {resume = true}). */
  g_autofree char *config = sieve_store_get_meta(box->store, "config", NULL);
  if (config != NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "sieve.study: %s holds a study of sieve run (its config is stored with it): go on with it through "
                "sieve.run(CONFIG, {store = ..., resume = true}), or give sieve.study another store",
                store_path);
    return FALSE;
  }
  /* A script's study from before the key: what it stored of itself (the
   * objective, direction and seed) must agree, and it gets the key. */
  g_autofree char *objective = sieve_store_get_meta(box->store, "objective", NULL);
  g_autofree char *direction = sieve_store_get_meta(box->store, "direction", NULL);
  g_autofree char *stored_seed = sieve_store_get_meta(box->store, "seed", NULL);
  g_autofree char *old_key = g_strdup_printf("objective[0].metric\t%s\nobjective[0].direction\t%s\nseed\t%s\n",
                                             objective ? objective : "(none)", direction ? direction : "(none)",
                                             stored_seed ? stored_seed : "(none)");
  g_autofree char *wanted = g_strdup_printf("objective[0].metric\t%s\nobjective[0].direction\t%s\nseed\t%"
                                            G_GINT64_FORMAT "\n",
                                            box->objectives.metrics[0],
                                            box->objectives.maximize[0] ? "maximize" : "minimize", (gint64) seed);
  if (!sieve__lua_study_key_check(old_key, wanted, store_path, error) || !study_resume(box, space, error))
    return FALSE;
  return sieve_store_set_meta(box->store, "lua_study_key", key, error);
}

/* pruner = {kind = "median", ...} at idx (the YAML `pruner:` section's
 * options): the study's pruner, refused as `sieve run` refuses it (more
 * than one objective; an evaluator that reports no intermediate values, or
 * another metric's), errors at the script's line. */
static gboolean
check_pruner(lua_State *L, int idx, StudyBox *box, const SieveEvaluator *evaluator, GError **error)
{
  guint line;
  g_autofree char *origin = sieve__lua_where(L, 1, &line);
  g_autofree char *rel = g_path_get_dirname(origin);
  g_autofree char *dir = g_canonicalize_filename(rel, NULL);
  if (!lua_istable(L, idx)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "%s:%u: sieve.study: pruner must be a table {kind = \"median\", warmup_steps = 2, ...}, got a %s", origin,
                line, luaL_typename(L, idx));
    return FALSE;
  }
  g_autoptr(SieveNode) node = sieve__lua_to_node(L, idx, origin, line, error);
  if (node == NULL)
    return FALSE;
  g_autofree char *refusal =
      sieve_engine_pruner_refusal(evaluator, (const char *const *) box->objectives.metrics, box->objectives.n);
  if (refusal != NULL) {
    sieve_node_set_error(error, node, "%s", refusal);
    return FALSE;
  }
  box->pruner = sieve_pruner_new(node, dir, box->objectives.maximize[0], error);
  if (box->pruner == NULL)
    return FALSE;
  box->pruner_options = sieve_options_new(sieve_pruner_spec(), node, NULL, dir, "pruner", error);
  return box->pruner_options != NULL;
}

static int
study_new(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  static const char *const keys[] = {"space", "optimizer", "evaluator", "objective", "seed",
                                     "store", "name",      "pruner",    "fidelity",  NULL};
  sieve__lua_check_keys(L, 1, "sieve.study", keys);
  lua_getfield(L, 1, "space");
  if (!luaL_testudata(L, 2, SIEVE_LUA_SPACE))
    return luaL_error(L, "study needs space = a sieve.space, got a %s", luaL_typename(L, 2));
  SieveSpace *space = sieve__lua_check_space(L, 2);
  lua_getfield(L, 1, "evaluator");
  if (!lua_isnil(L, 3) && !luaL_testudata(L, 3, SIEVE_LUA_EVALUATOR))
    return luaL_error(L, "study 'evaluator' must be a sieve.evaluator, got a %s", luaL_typename(L, 3));
  lua_getfield(L, 1, "store");
  const char *store_path = luaL_optstring(L, 4, NULL);
  lua_getfield(L, 1, "name");
  const char *name = luaL_optstring(L, 5, "lua-study");
  lua_getfield(L, 1, "seed");
  lua_Integer seed = luaL_optinteger(L, 6, 0);
  /* optimizer = "name" or {plugin = "name", ...options} */
  lua_getfield(L, 1, "optimizer");
  const char *opt_name = NULL;
  if (lua_type(L, 7) == LUA_TSTRING) {
    opt_name = lua_tostring(L, 7);
    lua_newtable(L);
  } else if (lua_istable(L, 7)) {
    lua_getfield(L, 7, "plugin");
    opt_name = lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_newtable(L); /* its options: the table without `plugin` */
    lua_pushnil(L);
    while (lua_next(L, 7) != 0) {
      if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "plugin") == 0) {
        lua_pop(L, 1);
        continue;
      }
      lua_pushvalue(L, -2);
      lua_insert(L, -2);
      lua_settable(L, 8);
    }
  }
  if (opt_name == NULL)
    return luaL_error(L, "study needs optimizer = NAME or {plugin = NAME, ...options}");
  StudyBox *box = push_study(L); /* from here the box's __gc frees what it holds */
  int study = lua_gettop(L);
  lua_pushvalue(L, 2);
  lua_setiuservalue(L, study, 1);
  lua_pushvalue(L, 3);
  lua_setiuservalue(L, study, 2);
  sieve__lua_check_objectives(L, 1, &box->objectives);
  /* As `sieve run` refuses it: an objective the evaluator says it never
   * reports (a misspelt metric would fail every trial). */
  SieveEvaluator *evaluator = sieve__lua_to_evaluator(L, 3);
  for (guint k = 0; evaluator != NULL && k < box->objectives.n; k++) {
    char *message = sieve_engine_objective_undeclared(sieve_component_get_name(sieve_evaluator_get_component(evaluator)),
                                                      sieve_evaluator_get_metrics(evaluator), box->objectives.metrics[k]);
    if (message != NULL) {
      luaL_where(L, 1);
      lua_pushstring(L, message);
      g_free(message); /* before raising: it skips C cleanups */
      lua_concat(L, 2);
      return lua_error(L);
    }
  }
  const SieveComponent *c;
  SieveOptions *options = sieve__lua_check_component_options(L, SIEVE_KIND_OPTIMIZER, opt_name, 8, &c);
  box->options = options; /* freed with the study, even on a raise */
  GError *error = NULL;
  lua_getfield(L, 1, "pruner");
  if (!lua_isnil(L, -1) && !check_pruner(L, lua_gettop(L), box, evaluator, &error))
    return sieve__lua_error_gerror(L, error);
  lua_pop(L, 1);
  /* Its evaluations' fidelity, for multi-fidelity optimizers and what a
   * report may reach: the evaluator's, or the script's own when it
   * evaluates by itself. */
  lua_getfield(L, 1, "fidelity");
  if (!lua_isnil(L, -1)) {
    if (evaluator != NULL)
      return luaL_error(L, "sieve.study: fidelity is for a study without an evaluator; evaluator '%s' offers its own%s",
                        sieve_component_get_name(sieve_evaluator_get_component(evaluator)),
                        sieve_evaluator_get_fidelity(evaluator) ? "" : " (none)");
    if (!sieve__lua_to_fidelity(L, lua_gettop(L), &box->fidelity, &error))
      return sieve__lua_error_gerror(L, error);
  } else if (evaluator != NULL && sieve_evaluator_get_fidelity(evaluator) != NULL) {
    box->fidelity = *sieve_evaluator_get_fidelity(evaluator);
    box->fidelity.name = g_strdup(box->fidelity.name);
  }
  lua_pop(L, 1);
  gboolean ok = study_setup(box, sieve__lua_host(L), space, store_path, name, opt_name, seed, options, &error);
  if (!ok) {
    /* Closed now, not at a collection: its store's writer lock would keep
     * the next sieve.study on it out (a live study holds no space at 1). */
    study_close(L, box);
    return sieve__lua_error_gerror(L, error);
  }
  lua_settop(L, study);
  return 1;
}

static gint
compare_strings(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* ---- sieve.run(file, {set = {...}, store = ..., resume = ..., accept_changed_scripts = ..., progress = ...}) ---- */

static gboolean
run_experiment(SieveLuaHost *host, const char *path, const char *const *overrides, const char *store_override,
               gboolean resume, gboolean accept_scripts, gboolean progress, StudyBox *box, GError **error)
{
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify) g_error_free);
  g_autoptr(SieveExperiment) exp = sieve_lua_experiment_load_granted(host, path, overrides, refused, error);
  /* As `sieve run` does: a plugin of the experiment's plugin_path that fails
   * to load is warned about and skipped (a section naming one of its
   * components then fails to resolve). */
  for (guint i = 0; i < refused->len; i++)
    g_warning("sieve.run: plugin refused: %s", ((GError *) refused->pdata[i])->message);
  if (exp == NULL) {
    g_prefix_error(error, "sieve.run: ");
    return FALSE;
  }
  g_autoptr(SieveEngine) engine = sieve_engine_new(exp, error);
  if (engine == NULL)
    return FALSE;
  g_autofree char *store_path = store_override ? sieve_store_canonical_name(store_override) : g_strdup(exp->store_path);
  {
    g_autoptr(SieveStore) store = sieve_store_open(store_path, SIEVE_STORE_WRITE, error);
    if (store == NULL || !sieve_study_open_full(store, exp, resume, accept_scripts, NULL, error))
      return FALSE;
    gint64 all = sieve_store_count_trials(store, -1, error);
    gint64 pending = all < 0 ? -1 : sieve_store_count_trials(store, SIEVE_STATUS_PENDING, error);
    if (pending < 0)
      return FALSE;
    gint64 done = all - pending;
    g_autoptr(SieveProgress) shown = progress ? sieve_progress_new(stdout, FALSE, exp->budget_evaluations, done,
                                                                   exp->objectives[0].metric, exp->objectives[0].maximize)
                                              : NULL;
    if (!sieve_engine_run(engine, store, shown, error))
      return FALSE;
  }
  /* The writer's lock goes; what is returned only reads. */
  box->store = sieve_store_open(store_path, SIEVE_STORE_READ, error);
  if (box->store == NULL)
    return FALSE;
  g_free(box->objectives.metrics);
  box->objectives.n = exp->n_objectives;
  box->objectives.metrics = g_new0(char *, exp->n_objectives + 1);
  box->objectives.maximize = g_new0(gboolean, exp->n_objectives);
  for (guint i = 0; i < exp->n_objectives; i++) {
    box->objectives.metrics[i] = g_strdup(exp->objectives[i].metric);
    box->objectives.maximize[i] = exp->objectives[i].maximize;
  }
  /* Built anew (the engine's went with it): the same component and options. */
  box->space = sieve_space_new(exp->space.component, exp->space.options, error);
  if (box->space == NULL)
    return FALSE;
  box->exp = g_steal_pointer(&exp);
  return TRUE;
}

static int
run_new(lua_State *L)
{
  luaL_checkstring(L, 1);
  lua_settop(L, 2);
  /* Relative to the calling script's folder, as paths in a YAML file are
   * relative to the file's (stores stay relative to the current folder). */
  {
    g_autofree char *origin = sieve__lua_where(L, 1, NULL);
    g_autofree char *origin_dir = g_path_get_dirname(origin);
    g_autofree char *base = g_canonicalize_filename(origin_dir, NULL);
    g_autofree char *resolved = g_canonicalize_filename(lua_tostring(L, 1), base);
    lua_pushstring(L, resolved); /* index 3; no C string outlives a possible raise */
  }
  const char *path = lua_tostring(L, 3);
  const char *store = NULL;
  gboolean resume = FALSE, accept_scripts = FALSE, progress = FALSE;
  if (!lua_isnil(L, 2))
    luaL_checktype(L, 2, LUA_TTABLE);
  static const char *const keys[] = {"set", "store", "resume", "accept_changed_scripts", "progress", NULL};
  sieve__lua_check_keys(L, 2, "sieve.run", keys);
  GPtrArray *overrides = g_ptr_array_new_with_free_func(g_free);
  if (!lua_isnil(L, 2)) {
    lua_getfield(L, 2, "store");
    store = lua_tostring(L, -1); /* stays on the stack */
    lua_getfield(L, 2, "resume");
    resume = lua_toboolean(L, -1);
    lua_getfield(L, 2, "progress");
    progress = lua_toboolean(L, -1);
    lua_getfield(L, 2, "accept_changed_scripts");
    accept_scripts = lua_toboolean(L, -1);
    lua_pop(L, 3); /* store's string stays on the stack */
    if (accept_scripts && !resume) {
      g_ptr_array_unref(overrides);
      return luaL_error(L, "sieve.run: accept_changed_scripts goes with resume = true");
    }
    lua_getfield(L, 2, "set");
    if (lua_istable(L, -1)) {
      /* Sorted keys: the overrides apply in the same order every run. */
      lua_pushnil(L);
      while (lua_next(L, -2) != 0) {
        GError *error = NULL;
        char *value = lua_type(L, -2) == LUA_TSTRING ? sieve__lua_to_yaml_flow(L, -1, &error) : NULL;
        if (value == NULL) {
          g_ptr_array_unref(overrides);
          if (error == NULL)
            return luaL_error(L, "run: 'set' maps dotted keys (strings) to values");
          return sieve__lua_error_gerror(L, error);
        }
        g_ptr_array_add(overrides, g_strdup_printf("%s=%s", lua_tostring(L, -2), value));
        g_free(value);
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  g_ptr_array_sort(overrides, compare_strings);
  g_ptr_array_add(overrides, NULL);
  StudyBox *box = push_study(L);
  GError *error = NULL;
  gboolean ok = run_experiment(sieve__lua_host(L), path, (const char *const *) overrides->pdata, store, resume,
                               accept_scripts, progress, box, &error);
  g_ptr_array_unref(overrides);
  if (!ok)
    return sieve__lua_error_gerror(L, error);
  int study = lua_gettop(L);
  sieve__lua_push_space(L, box->space, FALSE);
  lua_setiuservalue(L, study, 1);
  return 1;
}

static const luaL_Reg study_methods[] = {
    {"ask", study_ask},     {"tell", study_tell},   {"run", study_run},   {"best", study_best},
    {"report", study_report}, {"should_prune", study_should_prune}, {"evaluate", study_evaluate},
    {"best_trials", study_best_trials},
    {"trials", study_trials}, {"count", study_count}, {"path", study_path},
    {"intermediate", study_intermediate}, {"close", study_close_method},
    {NULL, NULL},
};

static const luaL_Reg study_metamethods[] = {
    {"__gc", study_gc}, {"__close", study_close_method}, {NULL, NULL},
};

static const luaL_Reg study_funcs[] = {
    {"study", study_new}, {"run", run_new}, {NULL, NULL},
};

void
sieve__lua_open_study(lua_State *L, int sieve_idx)
{
  sieve__lua_new_class(L, SIEVE_LUA_STUDY, study_methods, study_metamethods);
  sieve__lua_set_funcs(L, sieve_idx, study_funcs);
}
