/* sieve model export|eval|info: a trained network out of its study.
 *
 *   sieve model export STORE --trial N | --final N [-o model.onnx | -o net.safetensors]
 *   sieve model export --space nb201 --arch TEXT [--set space.C=8] [--weights FILE] [-o model.onnx]
 *   sieve model eval MODEL --dataset fashion-mnist        (test accuracy and latency)
 *   sieve model eval MODEL --input x.npy --output y.npy   (logits of given inputs)
 *   sieve model info MODEL
 *
 * MODEL is a weights file (safetensors) or an ONNX file sieve wrote: both
 * carry the space, its options and the genotype in their metadata, from
 * which the network is built again.  Errors name the file or the trial and
 * change nothing: stores are opened read-only, outputs written atomically. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "core/core-private.h"
#include "data/data-private.h"
#include "engine/engine-private.h"
#include "lua/lua-private.h"

/* ---- a network from a weights file's metadata --------------------------------- */

/* (transfer full) the space plugin name with options (a JSON object, as
 * sieve__options_to_json writes it, nullable) and overrides
 * ("space.KEY=VALUE"); paths of options that restored copied read the
 * copies (nullable). */
static SieveSpace *
space_new(SieveRegistry *registry, const char *name, const char *options_json, char **overrides,
          const SieveCliRestored *restored, const char *origin, GError **error)
{
  const SieveComponent *c = sieve_registry_require(registry, SIEVE_KIND_SPACE, name, NULL, error);
  if (c == NULL)
    return NULL;
  const SieveOptionSpec *spec = sieve_component_get_info(c)->options;
  g_autoptr(SieveNode) map = options_json ? sieve__options_json_parse(spec, options_json, origin, error)
                                          : sieve_node_new_map(origin, 0, 0); /* a flag: no line */
  if (map == NULL)
    return NULL;
  sieve_cli_restored_apply(restored, map, g_str_equal(name, "lua"));
  if (options_json != NULL && !sieve_cli_model_check_paths(spec, map, error))
    return NULL;
  for (guint i = 0; overrides && overrides[i]; i++) {
    const char *eq = strchr(overrides[i], '=');
    if (!g_str_has_prefix(overrides[i], "space.") || eq == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "--set %s: expected space.KEY=VALUE", overrides[i]);
      return NULL;
    }
    g_autofree char *key = g_strndup(overrides[i] + 6, eq - overrides[i] - 6);
    g_autofree char *flag = g_strdup_printf("--set %s", overrides[i]);
    if (!sieve_node_set_path(map, key, eq + 1, flag, error))
      return NULL;
  }
  const char *reserved[] = {"plugin", NULL};
  g_autofree char *context = g_strdup_printf("space '%s'", name);
  g_autoptr(SieveOptions) options = sieve_options_new(spec, map, reserved, NULL, context, error);
  if (options == NULL)
    return NULL;
  return sieve_space_new(c, options, error);
}

/* The network a weights file was trained as, checked against its tensors. */
typedef struct {
  SieveRegistry *registry;
  SieveSpace *space;
  SieveGraph *net;
  SieveWeights *weights;
} Model;

static void
model_clear(Model *m)
{
  g_clear_pointer(&m->weights, sieve_weights_free);
  g_clear_pointer(&m->net, sieve_graph_free);
  g_clear_pointer(&m->space, sieve_space_free);
  g_clear_pointer(&m->registry, sieve_registry_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Model, model_clear)

/* Loads every tensor of m->weights into a runtime for m->net: the check
 * that the file is this network's (names, shapes, nothing left over). */
static SieveRuntime *
compile_with_weights(const Model *m, guint batch, gboolean backward, const char *origin, GError **error)
{
  /* A file holds every parameter of its network (and the running
   * statistics besides): one with far fewer values is for another network,
   * refused before the runtime allocates and initialises this one (a
   * 64 KiB file whose metadata named C: 1024 cost 9 GB and a minute).  A
   * small difference costs little: the tensor check below then names the
   * first tensor whose shape differs. */
  guint64 needed = sieve_graph_params(m->net), held = sieve_weights_n_elements(m->weights);
  if (needed > held && needed - held > (G_GUINT64_CONSTANT(1) << 24)) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "%s: holds %" G_GUINT64_FORMAT " values but its network (space %s, genotype %s) has %" G_GUINT64_FORMAT
                " parameters: the weights are for another network",
                origin, held, sieve_weights_get_meta(m->weights, "space") ?: "unknown",
                sieve_weights_get_meta(m->weights, "genotype") ?: "unknown", needed);
    return NULL;
  }
  SieveRuntimeOptions ro = {.batch = batch, .backward = backward};
  g_autoptr(SieveRuntime) rt = sieve_runtime_new(m->net, &ro, error);
  if (rt == NULL || !sieve_weights_to_runtime(m->weights, rt, m->net, origin, error))
    return NULL;
  return g_steal_pointer(&rt);
}

/* FALSE, with error prefixed by the file and the metadata key it came
 * from unless it names the file already (an option's file:line:col does):
 * "no space plugin named 'x'" alone would not say that a model file, not
 * the command line, named it. */
static gboolean
name_metadata(GError **error, const char *origin, const char *key)
{
  if (error != NULL && *error != NULL && !g_str_has_prefix((*error)->message, origin))
    g_prefix_error(error, "%s (metadata %s): ", origin, key);
  return FALSE;
}

static gboolean
model_build(Model *m, const char *origin, GError **error)
{
  const char *space = sieve_weights_get_meta(m->weights, "space");
  const char *genotype = sieve_weights_get_meta(m->weights, "genotype");
  if (space == NULL || genotype == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                "%s: no space or genotype in its metadata: not a network sieve saved", origin);
    return FALSE;
  }
  m->registry = sieve_registry_new();
  sieve_registry_load_default(m->registry, NULL, NULL);
  g_autofree char *where = g_strdup_printf("%s (metadata space_options)", origin);
  g_autofree char *where_files = g_strdup_printf("%s (metadata space_files)", origin);
  const char *files = sieve_weights_get_meta(m->weights, "space_files");
  g_auto(SieveCliRestored) restored = {0};
  if (files != NULL && !sieve_cli_restore_files(&restored, files, where_files, error))
    return FALSE;
  m->space = space_new(m->registry, space, sieve_weights_get_meta(m->weights, "space_options"), NULL, &restored,
                       where, error);
  if (m->space == NULL)
    return name_metadata(error, origin, "space");
  g_autoptr(SieveGenotype) g = sieve_space_parse(m->space, genotype, error);
  if (g == NULL)
    return name_metadata(error, origin, "genotype");
  m->net = sieve_space_build(m->space, g, error);
  if (m->net == NULL)
    return name_metadata(error, origin, "genotype");
  g_autoptr(SieveRuntime) check = compile_with_weights(m, 1, FALSE, origin, error);
  return check != NULL;
}

static gboolean
model_load(Model *m, const char *path, GError **error)
{
  /* A model file may come from anyone, and its space's Lua scripts travel
   * in it (space_files) with the grants its options give them: they run in
   * the bare sandbox, within a viewer's limits (10 s a call, 1 GiB), as
   * sieve report runs a store's.  The caps hold for the rest of the
   * process. */
  sieve_lua_limit_process(0, "sieve model runs a model file's Lua with no grants, whatever its space asks for: "
                             "a file whose space's script needs one cannot be read; export the network from a "
                             "space whose script needs none");
  sieve_lua_limit_process_calls(SIEVE_LUA_VIEWER_SECONDS, SIEVE_LUA_DEFAULT_MEMORY);
  m->weights = sieve_weights_load(path, error);
  return m->weights != NULL && model_build(m, path, error);
}

/* ---- a network from a store ----------------------------------------------------- */

/* The study's experiment as stored, resolved against registry. */
static SieveExperiment *
stored_experiment(SieveStore *store, SieveRegistry *registry, const char *const *overrides, GError **error)
{
  g_autofree char *config = sieve_store_get_meta(store, "config", error);
  if (config == NULL) {
    if (error && *error == NULL)
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_STORE, "%s: holds no study", sieve_store_get_path(store));
    return NULL;
  }
  g_autofree char *dir = sieve_cli_study_dir(store);
  return sieve_lua_experiment_load_string(config, sieve_store_get_path(store), dir, overrides, registry, NULL, error);
}

/* Adds what a file needs to be built again without the store. */
static gboolean
describe_origin(SieveWeights *w, const SieveExperiment *exp, const char *genotype, const char *store, const char *what,
                gint64 number, GError **error)
{
  g_autoptr(SieveSpace) space = sieve_space_new(exp->space.component, exp->space.options, error);
  if (space == NULL)
    return FALSE;
  /* Built once, so that the modules a Lua space's build requires are
   * among those the file carries. */
  g_autoptr(SieveGenotype) g = sieve_space_parse(space, genotype, error);
  g_autoptr(SieveGraph) net = g ? sieve_space_build(space, g, error) : NULL;
  if (net == NULL || !sieve_cli_model_describe_space(w, space, error))
    return FALSE;
  g_autofree char *n = g_strdup_printf("%" G_GINT64_FORMAT, number);
  sieve_weights_set_meta(w, "genotype", genotype);
  sieve_weights_set_meta(w, "study", store);
  sieve_weights_set_meta(w, what, n);
  return TRUE;
}

/* A trial's (follows a cached trial to the one it reuses) or a final
 * training's network from store_path. */
static gboolean
model_from_store(Model *m, const char *store_path, gint64 trial, gint64 final, GError **error)
{
  g_autoptr(SieveStore) store = sieve_store_open(store_path, SIEVE_STORE_READ, error);
  if (store == NULL)
    return FALSE;
  m->registry = sieve_registry_new();
  sieve_registry_load_default(m->registry, NULL, NULL);
  g_autoptr(SieveExperiment) exp = stored_experiment(store, m->registry, NULL, error);
  if (exp == NULL)
    return FALSE;
  g_autofree char *genotype = NULL;
  g_autofree char *origin = NULL;
  g_autoptr(GBytes) bytes = NULL;
  GError *local = NULL;
  /* Why a final or trial that did not finish has no weights. */
  SieveStatus status = SIEVE_STATUS_OK;
  g_autofree char *reason = NULL;
  if (final >= 0) {
    g_autoptr(GPtrArray) finals = sieve_store_list_finals(store, error);
    if (finals == NULL)
      return FALSE;
    const SieveFinal *f = NULL;
    for (guint i = 0; i < finals->len && !f; i++)
      if (((SieveFinal *)finals->pdata[i])->number == final)
        f = finals->pdata[i];
    if (f == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no final training %" G_GINT64_FORMAT " (it has %u)",
                  store_path, final, finals->len);
      return FALSE;
    }
    genotype = g_strdup(f->genotype);
    origin = g_strdup_printf("%s final %" G_GINT64_FORMAT, store_path, final);
    status = f->status;
    reason = g_strdup(f->reason);
    bytes = sieve_store_get_weights(store, "final", final, &local);
  } else {
    g_autoptr(SieveTrial) t = sieve_store_get_trial(store, trial, &local);
    if (t == NULL && local == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: no trial %" G_GINT64_FORMAT " (it has %" G_GINT64_FORMAT
                  ")", store_path, trial, sieve_store_count_trials(store, -1, NULL));
      return FALSE;
    }
    if (t != NULL && t->status == SIEVE_STATUS_CACHED && t->cached_from >= 0)
      trial = t->cached_from; /* a duplicate's network is its original's */
    if (t != NULL) {
      status = t->status;
      reason = g_strdup(t->reason);
      genotype = g_strdup(t->genotype);
      origin = g_strdup_printf("%s trial %" G_GINT64_FORMAT, store_path, trial);
      bytes = sieve_store_get_weights(store, "trial", trial, &local);
    }
  }
  if (local != NULL) {
    g_propagate_error(error, local);
    return FALSE;
  }
  if (bytes == NULL && status == SIEVE_STATUS_PENDING) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: has not finished (pending): no weights yet%s", origin,
                final >= 0 ? " (run the same sieve final command again to train it)" : "");
    return FALSE;
  }
  if (bytes == NULL && status != SIEVE_STATUS_OK && status != SIEVE_STATUS_CACHED) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND, "%s: %s%s%s%s: no weights (only a training that succeeded keeps them)",
                origin, sieve_status_to_string(status), reason ? " (" : "", reason ? reason : "", reason ? ")" : "");
    return FALSE;
  }
  if (bytes == NULL) {
    /* Only an evaluator with keep_weights (train) keeps networks: to any
     * other the advice below would be a dead end (a new-user review). */
    gboolean keeps = FALSE;
    const SieveComponentInfo *info = sieve_component_get_info(exp->evaluator.component);
    for (const SieveOptionSpec *o = info->options; o != NULL && o->name != NULL; o++)
      keeps |= strcmp(o->name, "keep_weights") == 0;
    if (!keeps)
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND,
                  "%s: no weights: the study's evaluator '%s' trains no network that sieve keeps (only the train "
                  "evaluator does, with keep_weights: top or all), so there is no model to export",
                  origin, sieve_component_get_name(exp->evaluator.component));
    else
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_NOT_FOUND,
                  "%s: no weights kept (train with the train evaluator's keep_weights: top or all, or run sieve final)",
                  origin);
    return FALSE;
  }
  /* A space that the study's lua.load scripts register: a model file
   * carries no such script, and nothing could read it back. */
  const char *space_name = sieve_component_get_name(exp->space.component);
  g_autoptr(SieveRegistry) plain = sieve_registry_new();
  sieve_registry_load_default(plain, NULL, NULL);
  if (sieve_registry_lookup(plain, SIEVE_KIND_SPACE, space_name) == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "%s: the study's space '%s' is registered by its config's lua.load scripts, which a model file "
                "does not carry, so no model file of it could be read back; name the script in the space instead "
                "(space: {plugin: lua, script: FILE, options: {...}})",
                origin, space_name);
    return FALSE;
  }
  m->weights = sieve_weights_decode(bytes, origin, error);
  if (m->weights == NULL)
    return FALSE;
  if (!describe_origin(m->weights, exp, genotype, store_path, final >= 0 ? "final" : "trial",
                       final >= 0 ? final : trial, error))
    return FALSE;
  g_clear_pointer(&m->registry, sieve_registry_free);
  return model_build(m, origin, error);
}

/* ---- export ------------------------------------------------------------------------- */

static int
cmd_export(int argc, char **argv)
{
  gint64 trial = -1, final = -1;
  g_autofree char *out = NULL, *space = NULL, *arch = NULL, *weights = NULL;
  g_auto(GStrv) overrides = NULL;
  g_autofree char *batch_text = NULL;
  gint64 batch = 1;
  gint seed = 0;
  gboolean dynamic = FALSE;
  GOptionEntry entries[] = {
      {"trial", 0, 0, G_OPTION_ARG_INT64, &trial, "export trial N's kept weights", "N"},
      {"final", 0, 0, G_OPTION_ARG_INT64, &final, "export final training N (sieve final)", "N"},
      {"space", 0, 0, G_OPTION_ARG_STRING, &space, "a genotype alone: its space plugin", "NAME"},
      {"arch", 'a', 0, G_OPTION_ARG_STRING, &arch, "a genotype alone: its text", "TEXT"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides, "a space option, e.g. --set space.C=8", "space.KEY=VALUE"},
      {"weights", 'w', 0, G_OPTION_ARG_FILENAME, &weights, "weights for --arch (default: initial weights)", "FILE"},
      {"seed", 0, 0, G_OPTION_ARG_INT, &seed, "initial weights' seed (without --weights)", "S"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out,
       "the file: .safetensors writes the weights file, anything else ONNX (default model.onnx)", "FILE"},
      {"batch", 'b', 0, G_OPTION_ARG_STRING, &batch_text, "the ONNX input's batch size (default 1)", "N"},
      {"dynamic-batch", 0, 0, G_OPTION_ARG_NONE, &dynamic, "a symbolic batch dimension instead", NULL},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("[STORE] - write a trained network as ONNX or weights");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error) ||
      !sieve_cli_parse_int("--batch", batch_text, 1, 65536, &batch, &error))
    return sieve_cli_fail(error);
  if (batch_text && dynamic) {
    fprintf(stderr, "sieve model export: --batch %s and --dynamic-batch ask for two batch dimensions: give one\n",
            batch_text);
    return SIEVE_EXIT_USAGE;
  }
  gboolean from_store = argc == 2 && (trial >= 0) != (final >= 0) && !space && !arch && !weights;
  gboolean from_arch = argc == 1 && arch && trial < 0 && final < 0;
  if (!from_store && !from_arch) {
    fprintf(stderr, "sieve model export: expected STORE --trial N | --final N, or --space S --arch TEXT [--weights FILE] "
                    "(see 'sieve model export --help')\n");
    return SIEVE_EXIT_USAGE;
  }
  const char *path = out ? out : "model.onnx";
  if (from_store && !sieve_cli_check_output(argv[1], path, out ? "--output" : "the default output", &error))
    return sieve_cli_fail(error);
  g_auto(Model) m = {0};
  gint64 t0 = g_get_monotonic_time();
  if (from_store) {
    if (!model_from_store(&m, argv[1], trial, final, &error))
      return sieve_cli_fail(error);
  } else {
    m.registry = sieve_registry_new();
    sieve_registry_load_default(m.registry, NULL, NULL);
    /* Errors about the section point at the flag, as sieve hash's do. */
    g_autofree char *flag = space ? g_strdup_printf("--space %s", space) : g_strdup("sieve model export");
    m.space = space_new(m.registry, space ? space : "nb201", NULL, overrides, NULL, flag, &error);
    g_autoptr(SieveGenotype) g = m.space ? sieve_space_parse(m.space, arch, &error) : NULL;
    if (g == NULL || !(m.net = sieve_space_build(m.space, g, &error)))
      return sieve_cli_fail(error);
    g_autofree char *text = sieve_space_format(m.space, g);
    if (weights) {
      if (!(m.weights = sieve_weights_load(weights, &error)))
        return sieve_cli_fail(error);
      const char *theirs = sieve_weights_get_meta(m.weights, "genotype");
      const char *their_space = sieve_weights_get_meta(m.weights, "space");
      if ((theirs && !g_str_equal(theirs, text)) || (their_space && !g_str_equal(their_space, space ? space : "nb201"))) {
        g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: holds the weights of %s %s, not of %s %s", weights,
                    their_space ? their_space : "?", theirs ? theirs : "?", space ? space : "nb201", text);
        return sieve_cli_fail(error);
      }
      g_autoptr(SieveRuntime) check = compile_with_weights(&m, 1, FALSE, weights, &error);
      if (check == NULL)
        return sieve_cli_fail(error);
    } else {
      SieveRuntimeOptions ro = {.batch = 1, .seed = (guint64)seed};
      g_autoptr(SieveRuntime) rt = sieve_runtime_new(m.net, &ro, &error);
      if (rt == NULL || !(m.weights = sieve_weights_from_runtime(rt, m.net, &error)))
        return sieve_cli_fail(error);
      sieve_weights_set_meta(m.weights, "format", "sieve-weights-1");
      sieve_weights_set_meta(m.weights, "sieve_version", sieve_version_string());
      g_autofree char *s = g_strdup_printf("%d", seed);
      sieve_weights_set_meta(m.weights, "initial_seed", s);
    }
    /* The space's options as validated (defaults included), so that the
     * file builds the same network without these flags. */
    if (!sieve_cli_model_describe_space(m.weights, m.space, &error))
      return sieve_cli_fail(error);
    sieve_weights_set_meta(m.weights, "genotype", text);
  }
  const SieveGraphNode *in = sieve_graph_node(m.net, sieve_graph_input_node(m.net));
  const SieveGraphNode *o = sieve_graph_node(m.net, sieve_graph_output(m.net));
  g_autofree char *input = g_strdup_printf("%ux%ux%u", in->shape.c, in->shape.h, in->shape.w);
  g_autofree char *classes = g_strdup_printf("%u", o->shape.c);
  sieve_weights_set_meta(m.weights, "input", input);
  sieve_weights_set_meta(m.weights, "classes", classes);
  g_autoptr(GBytes) bytes = NULL;
  if (g_str_has_suffix(path, ".safetensors")) {
    bytes = sieve_weights_encode(m.weights);
  } else {
    SieveOnnxOptions oo = {.batch = dynamic ? 0 : (guint)batch};
    bytes = sieve_onnx_encode(m.net, m.weights, &oo, &error);
    if (bytes == NULL)
      return sieve_cli_fail(error);
  }
  if (!sieve_model_write_file(path, bytes, &error))
    return sieve_cli_fail(error);
  fprintf(stderr, "%s: %" G_GSIZE_FORMAT " bytes, %" G_GUINT64_FORMAT " parameters, %.3f s\n", path,
          g_bytes_get_size(bytes), sieve_graph_params(m.net), (g_get_monotonic_time() - t0) / 1e6);
  return SIEVE_EXIT_OK;
}

/* ---- eval ------------------------------------------------------------------------- */

/* "0.28,0.35" into n floats; FALSE when it does not have n. */
static gboolean
parse_floats(const char *text, float *out, guint n)
{
  if (text == NULL)
    return FALSE;
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  if (g_strv_length(parts) != n)
    return FALSE;
  for (guint i = 0; i < n; i++) {
    char *end = NULL;
    out[i] = (float)g_ascii_strtod(parts[i], &end);
    if (end == parts[i] || *end != '\0')
      return FALSE;
  }
  return TRUE;
}

static int
eval_inputs(const Model *m, const char *model_path, const char *input, const char *output)
{
  GError *error = NULL;
  g_autoptr(SieveNpy) x = sieve__npy_read(input, &error);
  if (x == NULL)
    return sieve_cli_fail(error);
  const SieveGraphNode *in = sieve_graph_node(m->net, sieve_graph_input_node(m->net));
  g_autofree char *shape = sieve__npy_shape_text(x);
  if (x->ndims != 4 || x->dims[1] != in->shape.c || x->dims[2] != in->shape.h || x->dims[3] != in->shape.w) {
    g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: shape %s, expected (N, %u, %u, %u) for %s", input, shape,
                in->shape.c, in->shape.h, in->shape.w, model_path);
    return sieve_cli_fail(error);
  }
  /* No examples, no output: an empty file of logits would hide the mistake. */
  if (x->dims[0] == 0 || x->dims[0] > G_MAXUINT) {
    g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_CONFIG, "%s: shape %s: %s", input, shape,
                x->dims[0] == 0 ? "no examples to evaluate" : "more examples than one run takes");
    return sieve_cli_fail(error);
  }
  g_autofree float *values = sieve__npy_to_f32(x, input, &error);
  if (values == NULL)
    return sieve_cli_fail(error);
  guint n = (guint)x->dims[0];
  g_autoptr(SieveRuntime) rt = compile_with_weights(m, n, FALSE, model_path, &error);
  if (rt == NULL || !sieve_runtime_forward(rt, values, NULL, SIEVE_MODE_EVAL, &error))
    return sieve_cli_fail(error);
  guint k = sieve_graph_node(m->net, sieve_graph_output(m->net))->shape.c;
  g_autofree float *z = g_new(float, (gsize)n * k);
  if (!sieve_runtime_read(rt, sieve_graph_output(m->net), z, &error))
    return sieve_cli_fail(error);
  g_autoptr(GBytes) bytes = sieve__npy_encode(SIEVE_NPY_F32, 2, (guint64[]){n, k}, z);
  if (!sieve_model_write_file(output, bytes, &error))
    return sieve_cli_fail(error);
  return SIEVE_EXIT_OK;
}

static int
cmd_eval(int argc, char **argv)
{
  g_autofree char *dataset = NULL, *data_dir = NULL, *input = NULL, *output = NULL;
  g_autofree char *threads_text = NULL, *batch_text = NULL;
  gint64 threads = 0, batch = 0; /* 0: not given */
  gint repeat = 20;
  GOptionEntry entries[] = {
      {"dataset", 'd', 0, G_OPTION_ARG_STRING, &dataset, "the test split of fashion-mnist, mnist, cifar10 ...", "NAME"},
      {"data-dir", 0, 0, G_OPTION_ARG_FILENAME, &data_dir, "where the dataset's files are", "DIR"},
      {"batch", 'b', 0, G_OPTION_ARG_STRING, &batch_text, "batch size (default: the training's)", "N"},
      {"threads", 't', 0, G_OPTION_ARG_STRING, &threads_text, "threads (default: every core)", "N"},
      {"repeat", 0, 0, G_OPTION_ARG_INT, &repeat, "one-example forwards timed for the latency (default 20)", "N"},
      {"input", 0, 0, G_OPTION_ARG_FILENAME, &input, "instead: run on an N x C x H x W .npy (no normalisation)", "X.npy"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "with --input: where the logits go (.npy)", "Y.npy"},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("MODEL - test accuracy and latency of a saved network");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (!sieve_cli_parse_int("--batch", batch_text, 1, 65536, &batch, &error) ||
      !sieve_cli_parse_int("--threads", threads_text, 0, 1024, &threads, &error))
    return sieve_cli_fail(error);
  if (repeat < 1) {
    fprintf(stderr, "sieve model eval: --repeat %d: expected the number of timed one-example runs, >= 1\n", repeat);
    return SIEVE_EXIT_USAGE;
  }
  if (argc != 2 || (!dataset && !input) || (input && !output)) {
    fprintf(stderr, "sieve model eval: expected MODEL --dataset NAME, or MODEL --input X.npy --output Y.npy\n");
    return SIEVE_EXIT_USAGE;
  }
  const char *path = argv[1];
  g_auto(Model) m = {0};
  if (!model_load(&m, path, &error))
    return sieve_cli_fail(error);
  if (input)
    return eval_inputs(&m, path, input, output);

  g_autoptr(SieveDataset) test = sieve_dataset_open(dataset, data_dir, "test", &error);
  if (test == NULL)
    return sieve_cli_fail(error);
  /* The network reads examples of its input's shape from the dataset's
   * buffer and scores its classes against the labels: another shape would
   * read out of bounds, other classes would give a number that means
   * nothing.  Refused as `sieve run` refuses them, with what to export. */
  const SieveGraphNode *in = sieve_graph_node(m.net, sieve_graph_input_node(m.net));
  guint classes = sieve_graph_node(m.net, sieve_graph_output(m.net))->shape.c;
  if (in->shape.c != test->channels || in->shape.h != test->height || in->shape.w != test->width ||
      classes != test->n_classes) {
    g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "%s: the network takes %ux%ux%u inputs and scores %u classes, and %s has %ux%ux%u "
                "images of %u classes (export the network for it: --set space.in_channels=%u --set space.size=%u "
                "--set space.classes=%u, where its space has these options)",
                path, in->shape.c, in->shape.h, in->shape.w, classes, test->name, test->channels, test->height,
                test->width, test->n_classes, test->channels, test->height, test->n_classes);
    return sieve_cli_fail(error);
  }
  const char *mean_text = sieve_weights_get_meta(m.weights, "normalize_mean");
  if (mean_text != NULL) {
    /* The training split's statistics, as the network saw its inputs. */
    g_autofree float *mean = g_new(float, test->channels);
    g_autofree float *std = g_new(float, test->channels);
    if (!parse_floats(mean_text, mean, test->channels) ||
        !parse_floats(sieve_weights_get_meta(m.weights, "normalize_std"), std, test->channels)) {
      g_set_error(&error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "%s: its normalisation does not fit %s's %u channels", path,
                  test->name, test->channels);
      return sieve_cli_fail(error);
    }
    sieve_dataset_normalize(test, mean, std);
  }
  SieveTrainOptions o;
  sieve_train_options_init(&o);
  const char *trained_batch = sieve_weights_get_meta(m.weights, "batch_size");
  o.batch_size = batch > 0 ? (guint)batch : trained_batch ? (guint)g_ascii_strtoull(trained_batch, NULL, 10) : 128;
  o.threads = (guint)threads;
  if (o.batch_size == 0)
    o.batch_size = 128;
  /* Compiled as training compiled it, so that the accuracy is the very one
   * the trial reported. */
  guint logits = 0;
  g_autoptr(SieveRuntime) rt = sieve_train_compile(m.net, &o, &logits, &error);
  if (rt == NULL || !sieve_weights_to_runtime(m.weights, rt, m.net, path, &error))
    return sieve_cli_fail(error);
  guint k = sieve_graph_node(m.net, logits)->shape.c;
  gint64 t0 = g_get_monotonic_time();
  double acc = NAN;
  if (!sieve_train_accuracy(rt, logits, k, test, &acc, &error))
    return sieve_cli_fail(error);
  double pass_s = (g_get_monotonic_time() - t0) / 1e6;
  /* Latency: one example at a time in an inference-only runtime, the median. */
  g_autoptr(SieveRuntime) one = compile_with_weights(&m, 1, FALSE, path, &error);
  if (one == NULL)
    return sieve_cli_fail(error);
  gsize ex = (gsize)test->channels * test->height * test->width;
  g_autofree double *ms = g_new(double, repeat);
  for (gint r = -1; r < repeat; r++) {
    gint64 s = g_get_monotonic_time();
    if (!sieve_runtime_forward(one, test->x + (gsize)(MAX(r, 0) % test->n) * ex, NULL, SIEVE_MODE_EVAL, &error))
      return sieve_cli_fail(error);
    if (r >= 0) /* the first run pays for first-touch pages */
      ms[r] = (g_get_monotonic_time() - s) / 1e3;
  }
  for (gint i = 1; i < repeat; i++)
    for (gint j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
      double t = ms[j];
      ms[j] = ms[j - 1];
      ms[j - 1] = t;
    }
  GString *line = g_string_new("{\"model\":");
  sieve_json_append_string(line, path);
  g_string_append(line, ",\"genotype\":");
  sieve_json_append_string(line, sieve_weights_get_meta(m.weights, "genotype"));
  g_string_append(line, ",\"dataset\":");
  sieve_json_append_string(line, test->name);
  g_string_append_printf(line, ",\"examples\":%u,\"test_acc\":", test->n);
  sieve_json_append_double(line, acc);
  g_string_append_printf(line, ",\"batch\":%u,\"images_per_s\":", o.batch_size);
  sieve_json_append_double(line, round(test->n / pass_s));
  g_string_append(line, ",\"latency_ms\":");
  sieve_json_append_double(line, round(ms[repeat / 2] * 1000) / 1000);
  g_string_append(line, "}");
  printf("%s\n", line->str);
  g_string_free(line, TRUE);
  return SIEVE_EXIT_OK;
}

/* ---- info --------------------------------------------------------------------------- */

static int
cmd_info(int argc, char **argv)
{
  GOptionEntry entries[] = {{NULL}};
  g_autoptr(GOptionContext) context = g_option_context_new("MODEL - what a saved network is");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  if (argc != 2) {
    fprintf(stderr, "sieve model info: expected MODEL (a .safetensors or .onnx file sieve wrote)\n");
    return SIEVE_EXIT_USAGE;
  }
  g_auto(Model) m = {0};
  if (!model_load(&m, argv[1], &error))
    return sieve_cli_fail(error);
  guint counts[SIEVE_N_OPS] = {0};
  guint layers = 0;
  for (guint v = 0; v < sieve_graph_n_nodes(m.net); v++)
    if (sieve_graph_node_live(m.net, v)) {
      counts[sieve_graph_node(m.net, v)->kind]++;
      layers++;
    }
  printf("model: %s\n", argv[1]);
  printf("space: %s %s\n", sieve_weights_get_meta(m.weights, "space"),
         sieve_weights_get_meta(m.weights, "space_options") ?: "");
  printf("genotype: %s\n", sieve_weights_get_meta(m.weights, "genotype"));
  printf("input: %s\nclasses: %s\n", sieve_weights_get_meta(m.weights, "input") ?: "?",
         sieve_weights_get_meta(m.weights, "classes") ?: "?");
  printf("parameters: %" G_GUINT64_FORMAT "\n", sieve_graph_params(m.net));
  printf("macs: %" G_GUINT64_FORMAT "\n", sieve_graph_macs(m.net));
  printf("tensors: %u (%" G_GUINT64_FORMAT " values, running statistics included)\n",
         sieve_weights_n_tensors(m.weights), sieve_weights_n_elements(m.weights));
  printf("layers: %u:", layers);
  for (guint k = 0; k < SIEVE_N_OPS; k++)
    if (counts[k])
      printf(" %s %u", sieve_op_kind_name(k), counts[k]);
  printf("\n");
  g_autofree const char **keys = sieve_weights_meta_keys(m.weights);
  for (guint i = 0; keys[i]; i++)
    if (!g_str_equal(keys[i], "space") && !g_str_equal(keys[i], "space_options") && !g_str_equal(keys[i], "genotype") &&
        !g_str_equal(keys[i], "input") && !g_str_equal(keys[i], "classes") && !g_str_equal(keys[i], "space_files"))
      printf("%s: %s\n", keys[i], sieve_weights_get_meta(m.weights, keys[i]));
  /* The files' names, not their texts (model_load read them already, a
   * key written twice by an older sieve once). */
  const char *files = sieve_weights_get_meta(m.weights, "space_files");
  g_autoptr(SieveNode) map = files ? sieve__node_parse_string_repeats(files, "space_files", NULL) : NULL;
  for (guint i = 0; map && i < sieve_node_size(map); i++)
    printf("space_file: %s (%zu bytes)\n", sieve_node_text(sieve_node_nth_key(map, i)),
           strlen(sieve_node_text(sieve_node_nth(map, i))));
  return SIEVE_EXIT_OK;
}

int
sieve_cmd_model(int argc, char **argv)
{
  if (argc >= 2 && g_str_equal(argv[1], "export"))
    return cmd_export(argc - 1, argv + 1);
  if (argc >= 2 && g_str_equal(argv[1], "eval"))
    return cmd_eval(argc - 1, argv + 1);
  if (argc >= 2 && g_str_equal(argv[1], "info"))
    return cmd_info(argc - 1, argv + 1);
  FILE *out = argc >= 2 && (g_str_equal(argv[1], "--help") || g_str_equal(argv[1], "-h")) ? stdout : stderr;
  fprintf(out, "Usage: sieve model export|eval|info ...\n"
               "  export STORE --trial N | --final N [-o model.onnx]   a kept network as ONNX (or .safetensors)\n"
               "  export --space S --arch TEXT [--weights FILE]       a genotype alone\n"
               "  eval MODEL --dataset NAME                           test accuracy and latency\n"
               "  info MODEL                                          layers, parameters, MACs, genotype\n");
  return out == stdout ? SIEVE_EXIT_OK : SIEVE_EXIT_USAGE;
}
