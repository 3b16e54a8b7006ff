/* sieve: the builtin `compose` space: several spaces as one, so that an
 * architecture and its training recipe are searched together (FBNetV3,
 * Dai et al. 2021, found that searching them jointly beats searching them
 * apart).
 *
 *   space:
 *     plugin: compose
 *     parts:
 *       - {plugin: nb201, C: 8, N: 1, in_channels: 1, size: 28}
 *       - {plugin: hpo, file: recipe.yaml}
 *
 * The composite's decisions are the parts' decisions one after the other
 * (names unique across parts), so every optimizer samples, mutates and
 * encodes it as any space.  At most one part builds networks: build() and
 * the hashes are its (sieve_space_is_architecture tells its decisions from
 * the recipe's).  The text is the parts' texts in order, joined by ';', each
 * with '%' written %25 and ';' written %3B:
 *
 *   |nor_conv_3x3~0|+|skip_connect~0|none~1|+|...|;lr=0.05,weight_decay=0.0003
 *
 * and a part that does not parse is reported with its number, plugin and
 * the character where its text starts.
 */
#include <string.h>


#include "core/core-private.h"

typedef struct {
  GPtrArray *parts; /* SieveSpace* (owned) */
  GArray *first;    /* guint: index of each part's first decision in the composite */
  gint arch;        /* the part that builds networks, or -1 */
} Compose;

static const SieveOptionSpec compose_options[] = {
  SIEVE_OPTION_NODE("parts", "the spaces joined, in order: a list of {plugin: NAME, ...its options}; at most one "
                             "builds networks (the architecture), the others are the recipe"),
  SIEVE_OPTION_END,
};

static void
compose_destroy(gpointer instance)
{
  Compose *self = instance;
  g_ptr_array_unref(self->parts);
  g_array_unref(self->first);
  g_free(self);
}

static guint
part_first(const Compose *self, guint k)
{
  return g_array_index(self->first, guint, k);
}

/* Part k's share of a composite genotype, as a genotype of the part. (transfer full) */
static SieveGenotype *
part_genotype(const Compose *self, guint k, const SieveGenotype *genotype)
{
  SieveGenotype *g = sieve_genotype_new(self->parts->pdata[k]);
  for (guint i = 0; i < sieve_genotype_size(g); i++)
    sieve_genotype_set(g, i, sieve_genotype_get(genotype, part_first(self, k) + i));
  return g;
}

/* The folder relative paths in a part resolve against: the composite's own
 * options' (the experiment's folder, also when it is read back from a
 * store kept elsewhere), else the file the node names as its origin (NULL:
 * the current one). */
static char *
base_dir(const SieveOptions *options, const SieveNode *node)
{
  if (sieve__options_get_base_dir(options) != NULL)
    return g_canonicalize_filename(sieve__options_get_base_dir(options), NULL);
  const char *origin = sieve_node_origin(node);
  if (origin == NULL || !g_file_test(origin, G_FILE_TEST_IS_REGULAR))
    return NULL;
  g_autofree char *dir = g_path_get_dirname(origin);
  return g_canonicalize_filename(dir, NULL); /* options resolve against an absolute folder */
}

/* Appends part k's decisions, their conditions and where they were
 * declared to space. */
static gboolean
add_part(SieveSpace *space, const Compose *self, const SieveSpace *part, guint k, const SieveNode *item,
         GError **error)
{
  guint first = sieve_space_n_decisions(space);
  for (guint i = 0; i < sieve_space_n_decisions(part); i++) {
    const SieveDecision *d = sieve_space_decision(part, i);
    gint other = sieve_space_find(space, d->name);
    if (other >= 0) {
      guint owner = 0;
      while (owner + 1 < k && (guint) other >= part_first(self, owner + 1))
        owner++;
      sieve_node_set_error(error, item, "decision '%s' of part #%u (%s) is also a decision of part #%u (%s): "
                           "names must be unique across the parts", d->name, k + 1, sieve_space_get_name(part),
                           owner + 1, sieve_space_get_name(self->parts->pdata[owner]));
      return FALSE;
    }
    guint j = 0;
    switch (d->kind) {
    case SIEVE_DECISION_CATEGORICAL:
      j = sieve_space_add_categorical(space, d->name, d->n_choices, d->choices);
      for (guint c = 0; c < d->n_choices; c++)
        if (sieve_space_choice_json(part, i, c) != NULL)
          sieve_space_set_choice_json(space, j, c, sieve_space_choice_json(part, i, c));
      break;
    case SIEVE_DECISION_INT:
      j = sieve_space_add_int(space, d->name, (gint64) d->low, (gint64) d->high, d->log);
      break;
    case SIEVE_DECISION_FLOAT:
      j = sieve_space_add_float(space, d->name, d->low, d->high, d->log);
      break;
    }
    g_assert(j == first + i);
    if (d->parent >= 0)
      sieve_space_set_condition(space, j, first + (guint) d->parent, d->parent_mask);
    sieve__space_set_where_text(space, j, sieve_space_decision_where(part, i));
  }
  return TRUE;
}

static const SieveSpaceClass compose_class, compose_build_class;

static gpointer
compose_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  const SieveRegistry *registry = sieve__space_get_registry(space);
  const SieveNode *list = sieve_options_get_node(options, "parts");
  if (list == NULL) {
    sieve_options_set_error(options, "parts", error,
                            "space 'compose' needs 'parts': a list of spaces such as [{plugin: nb201}, "
                            "{plugin: hpo, file: recipe.yaml}]");
    return NULL;
  }
  if (sieve_node_kind(list) != SIEVE_NODE_LIST || sieve_node_size(list) == 0) {
    sieve_node_set_error(error, list, "'parts' must be a non-empty list of {plugin: NAME, ...} maps");
    return NULL;
  }
  g_return_val_if_fail(registry != NULL, NULL);
  Compose *self = g_new0(Compose, 1);
  self->parts = g_ptr_array_new_with_free_func((GDestroyNotify) sieve_space_free);
  self->first = g_array_new(FALSE, FALSE, sizeof(guint));
  self->arch = -1;
  g_autofree char *dir = base_dir(options, list);
  /* The parts as they were written, their paths resolved: what a model
   * file carries, so that it builds the space again from any folder. */
  g_autoptr(SieveNode) written = sieve_node_new_list(sieve_node_origin(list), sieve_node_line(list),
                                                     sieve_node_column(list));
  static const char *const reserved[] = {"plugin", NULL};
  for (guint k = 0; k < sieve_node_size(list); k++) {
    const SieveNode *item = sieve_node_nth(list, k);
    const SieveNode *plugin = sieve_node_kind(item) == SIEVE_NODE_MAP ? sieve_node_lookup(item, "plugin") : NULL;
    if (plugin == NULL) {
      sieve_node_set_error(error, item, "part #%u must be a map with a 'plugin' key naming a space plugin", k + 1);
      goto fail;
    }
    const char *name = sieve_node_get_string(plugin, error);
    const SieveComponent *component =
        name ? sieve_registry_require(registry, SIEVE_KIND_SPACE, name, plugin, error) : NULL;
    if (component == NULL)
      goto fail;
    g_autofree char *context = g_strdup_printf("space part #%u '%s'", k + 1, name);
    g_autoptr(SieveOptions) part_options =
        sieve_options_new(sieve_component_get_info(component)->options, item, reserved, dir, context, error);
    if (part_options == NULL)
      goto fail;
    g_autoptr(SieveSpace) part = sieve_space_new(component, part_options, error);
    if (part == NULL)
      goto fail;
    if (sieve_space_can_build(part)) {
      if (self->arch >= 0) {
        sieve_node_set_error(error, plugin, "part #%u (%s) builds networks, as part #%d (%s) does: a composite "
                             "space has at most one architecture part", k + 1, name, self->arch + 1,
                             sieve_space_get_name(self->parts->pdata[self->arch]));
        goto fail;
      }
      self->arch = (gint) k;
    }
    guint first = sieve_space_n_decisions(space);
    g_array_append_val(self->first, first);
    if (!add_part(space, self, part, k, item, error))
      goto fail;
    SieveNode *part_written = sieve_node_new_map(sieve_node_origin(item), sieve_node_line(item),
                                                 sieve_node_column(item));
    sieve_node_map_set(part_written, "plugin", sieve_node_copy(plugin));
    g_autoptr(SieveNode) resolved = sieve__space_get_written(part);
    for (guint i = 0; i < sieve_node_size(resolved); i++)
      sieve_node_map_set(part_written, sieve_node_text(sieve_node_nth_key(resolved, i)),
                         sieve_node_copy(sieve_node_nth(resolved, i)));
    sieve_node_list_append(written, part_written);
    g_ptr_array_add(self->parts, g_steal_pointer(&part));
  }
  SieveNode *own = sieve__space_get_written(space);
  sieve_node_map_set(own, "parts", g_steal_pointer(&written));
  sieve__space_set_written(space, own);
  sieve_node_unref(own);
  if (self->arch >= 0)
    sieve__space_set_class(space, &compose_build_class);
  return self;
fail:
  compose_destroy(self);
  return NULL;
}

/* '%' and ';' inside a part's text, so that ';' only ever separates parts. */
static void
append_escaped(GString *out, const char *text)
{
  for (const char *p = text; *p; p++) {
    if (*p == '%')
      g_string_append(out, "%25");
    else if (*p == ';')
      g_string_append(out, "%3B");
    else
      g_string_append_c(out, *p);
  }
}

static char *
compose_format(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype)
{
  Compose *self = instance;
  GString *out = g_string_new(NULL);
  for (guint k = 0; k < self->parts->len; k++) {
    g_autoptr(SieveGenotype) part = part_genotype(self, k, genotype);
    g_autofree char *text = sieve_space_format(self->parts->pdata[k], part);
    if (k > 0)
      g_string_append_c(out, ';');
    append_escaped(out, text);
  }
  return g_string_free(out, FALSE);
}

static SieveGenotype *
compose_parse(gpointer instance, const SieveSpace *space, const char *text, GError **error)
{
  Compose *self = instance;
  g_autoptr(SieveGenotype) genotype = sieve_genotype_new(space);
  guint n = self->parts->len;
  const char *p = text;
#define AT(q) ((guint) ((q) - text) + 1)
  for (guint k = 0; k < n; k++) {
    const SieveSpace *part = self->parts->pdata[k];
    const char *start = p;
    g_autoptr(GString) piece = g_string_new(NULL);
    while (*p != '\0' && *p != ';') {
      if (*p != '%') {
        g_string_append_c(piece, *p++);
      } else if (g_ascii_strncasecmp(p, "%25", 3) == 0) {
        g_string_append_c(piece, '%');
        p += 3;
      } else if (g_ascii_strncasecmp(p, "%3B", 3) == 0) {
        g_string_append_c(piece, ';');
        p += 3;
      } else {
        g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                    "stray '%%' at character %u (inside a part, '%%' is written %%25 and ';' %%3B)", AT(p));
        return NULL;
      }
    }
    if (k + 1 < n && *p != ';') {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE,
                  "the text ends at character %u after part #%u (%s); expected ';' and part #%u (%s): the space "
                  "has %u parts", AT(p), k + 1, sieve_space_get_name(part), k + 2,
                  sieve_space_get_name(self->parts->pdata[k + 1]), n);
      return NULL;
    }
    if (k + 1 == n && *p == ';') {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "unexpected ';' at character %u: the space has %u part%s",
                  AT(p), n, n == 1 ? "" : "s");
      return NULL;
    }
    GError *local = NULL;
    g_autoptr(SieveGenotype) g = sieve_space_parse(part, piece->str, &local);
    if (g == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_PARSE, "part #%u (%s), from character %u: %s", k + 1,
                  sieve_space_get_name(part), AT(start), local->message);
      g_error_free(local);
      return NULL;
    }
    for (guint i = 0; i < sieve_genotype_size(g); i++)
      sieve_genotype_set(genotype, part_first(self, k) + i, sieve_genotype_get(g, i));
    if (*p == ';')
      p++;
  }
#undef AT
  return g_steal_pointer(&genotype);
}

static SieveGraph *
compose_build(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  Compose *self = instance;
  g_autoptr(SieveGenotype) part = part_genotype(self, (guint) self->arch, genotype);
  return sieve_space_build(self->parts->pdata[self->arch], part, error);
}

const SieveSpace *
sieve__space_arch_part(const SieveSpace *space, guint *first)
{
  const SieveSpaceClass *klass = sieve__space_get_class(space);
  if (klass != &compose_build_class)
    return NULL;
  const Compose *self = sieve_space_get_instance(space);
  *first = part_first(self, (guint) self->arch);
  return self->parts->pdata[self->arch];
}

const SieveSpace *
sieve__space_part(const SieveSpace *space, guint k)
{
  const SieveSpaceClass *klass = sieve__space_get_class(space);
  if (klass != &compose_build_class && klass != &compose_class)
    return NULL;
  const Compose *self = sieve_space_get_instance(space);
  return k < self->parts->len ? self->parts->pdata[k] : NULL;
}

/* Without an architecture part: a recipe alone, which builds nothing. */
static const SieveSpaceClass compose_class = {
  .create = compose_create,
  .destroy = compose_destroy,
  .format = compose_format,
  .parse = compose_parse,
};

static const SieveSpaceClass compose_build_class = {
  .create = compose_create,
  .destroy = compose_destroy,
  .format = compose_format,
  .parse = compose_parse,
  .build = compose_build,
};

const SieveComponentInfo sieve__compose_info = {
  .kind = SIEVE_KIND_SPACE,
  .name = "compose",
  .summary = "several spaces as one: an architecture and its training recipe searched together",
  .options = compose_options,
  .klass = &compose_class,
  .example = "{plugin: compose, parts: [{plugin: nb201}, {plugin: hpo, file: search_spaces/recipe.yaml}]}",
};
