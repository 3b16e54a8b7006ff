/* sieve hash --space nb201 [--set space.KEY=VAL ...] [--kind structural|functional|both]
 *            [--threads N] ARCH... | - | --all
 *
 * Prints one line per candidate, in input order:
 *
 *   genotype<TAB>structural<TAB>functional
 *
 * hashes as 32 hex digits (sieve/hash.h), "-" in the column of a kind not
 * asked for, so the columns never move.  The genotype is the space's
 * canonical text.  Candidates are hashed on --threads worker threads (every
 * core by default), each running its probe networks on one thread; a
 * space written in Lua runs on its script's thread, so its candidates are
 * hashed on the main thread, one at a time.  A
 * candidate that does not parse is reported on stderr with the argument or
 * line that held it; the others are still hashed, and the exit status is 1
 * at the end. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"
#include "lua/lua-private.h"

#define ALL_MAX 2000000.0 /* --all refuses larger spaces: one line (and one genotype in memory) each */

typedef struct {
  char *text;      /* as given (NULL for --all) */
  char *where;     /* "argument 2", "line 5 of stdin" */
  SieveGenotype *genotype; /* --all: given; otherwise parsed by the worker */
  char *line;      /* the output line, without newline */
  char *error;     /* or the message */
  gboolean done;
} Item;

typedef struct {
  const SieveSpace *space;
  gboolean structural, functional;
  Item *items;
  guint n_items;
  gint next; /* atomic: the next item to take */
  GMutex lock;
  GCond cond;
} Job;

static void
hash_item(Job *job, Item *item)
{
  if (item->error != NULL) /* refused as it was read */
    return;
  GError *error = NULL;
  if (item->genotype == NULL)
    item->genotype = sieve_space_parse(job->space, item->text, &error);
  char s[SIEVE_HASH_TEXT_LEN] = "-", f[SIEVE_HASH_TEXT_LEN] = "-";
  SieveHash h;
  gboolean ok = item->genotype != NULL;
  if (ok && job->structural) {
    ok = sieve_space_hash(job->space, item->genotype, SIEVE_HASH_STRUCTURAL, &h, &error);
    if (ok)
      sieve_hash_format(&h, s);
  }
  if (ok && job->functional) {
    ok = sieve_space_hash(job->space, item->genotype, SIEVE_HASH_FUNCTIONAL, &h, &error);
    if (ok)
      sieve_hash_format(&h, f);
  }
  if (ok) {
    g_autofree char *text = sieve_space_format(job->space, item->genotype);
    item->line = g_strdup_printf("%s\t%s\t%s", text, s, f);
  } else {
    item->error = g_strdup_printf("%s: %s", item->where, error->message);
    g_error_free(error);
  }
}

static gpointer
worker(gpointer data)
{
  Job *job = data;
  for (;;) {
    guint i = (guint)g_atomic_int_add(&job->next, 1);
    if (i >= job->n_items)
      return NULL;
    hash_item(job, &job->items[i]);
    g_mutex_lock(&job->lock);
    job->items[i].done = TRUE;
    g_cond_broadcast(&job->cond);
    g_mutex_unlock(&job->lock);
  }
}

static void
add_item(GArray *items, char *text, char *where)
{
  Item it = {.text = text, .where = where};
  g_array_append_val(items, it);
}

/* Lines of stdin as items; blank lines are skipped. */
static void
read_stdin(GArray *items)
{
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  guint number = 0;
  while ((len = getline(&line, &cap, stdin)) >= 0) {
    number++;
    /* C reads a text up to its first NUL: the rest of the line would be
     * dropped unseen, and a junk line hashed as the candidate before it. */
    const char *nul = memchr(line, '\0', (size_t)len);
    if (nul != NULL) {
      Item it = {.where = g_strdup_printf("line %u of stdin", number),
                 .error = g_strdup_printf("line %u of stdin: a NUL byte at character %ld (a candidate is text)",
                                          number, (long)(nul - line) + 1)};
      g_array_append_val(items, it);
      continue;
    }
    g_strstrip(line);
    if (line[0] == '\0')
      continue;
    add_item(items, g_strdup(line), g_strdup_printf("line %u of stdin", number));
  }
  free(line);
}

int
sieve_cmd_hash(int argc, char **argv)
{
  g_autofree char *space_name = NULL, *kind = NULL;
  g_auto(GStrv) overrides = NULL;
  gboolean all = FALSE;
  gint threads = 0;
  GOptionEntry entries[] = {
      {"space", 's', 0, G_OPTION_ARG_STRING, &space_name, "architecture space plugin (default nb201)", "NAME"},
      {"set", 0, 0, G_OPTION_ARG_STRING_ARRAY, &overrides, "set an option of the space, e.g. --set space.C=8",
       "space.KEY=VALUE"},
      {"kind", 'k', 0, G_OPTION_ARG_STRING, &kind, "structural, functional or both (default both)", "KIND"},
      {"all", 0, 0, G_OPTION_ARG_NONE, &all, "hash every candidate of the (finite) space", NULL},
      {"threads", 't', 0, G_OPTION_ARG_INT, &threads, "worker threads (default: every core)", "N"},
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("ARCH... | - | --all - print candidates' hashes");
  g_option_context_set_description(
      context,
      "Prints genotype<TAB>structural<TAB>functional per candidate, in input order; '-' in the column of a\n"
      "kind not asked for.  '-' reads candidates from stdin, one per line.  The structural hash is of the\n"
      "canonicalised network at the space's scale, the functional hash of its outputs at the space's probe\n"
      "scale; networks whose output ignores the input hash to 32 zeros.\n"
      "A candidate that does not parse is reported on stderr (with its argument or line); the others are\n"
      "still hashed and the exit status is 1.\n\n"
      "Example:\n  sieve hash --space nb201 '|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|"
      "nor_conv_3x3~1|skip_connect~2|'\n  sieve hash --space nb201 --all --kind structural | cut -f2 | sort -u | wc -l");
  g_option_context_add_main_entries(context, entries, NULL);
  GError *error = NULL;
  if (!g_option_context_parse(context, &argc, &argv, &error))
    return sieve_cli_fail(error);
  gboolean structural = TRUE, functional = TRUE;
  if (kind != NULL && !g_str_equal(kind, "both")) {
    SieveHashKind k;
    if (!sieve_hash_kind_from_name(kind, &k)) {
      fprintf(stderr, "sieve hash: --kind '%s': expected structural, functional or both\n", kind);
      return SIEVE_EXIT_USAGE;
    }
    structural = k == SIEVE_HASH_STRUCTURAL;
    functional = k == SIEVE_HASH_FUNCTIONAL;
  }
  if (threads < 0) {
    fprintf(stderr, "sieve hash: --threads must be at least 1 (0: every core)\n");
    return SIEVE_EXIT_USAGE;
  }
  if (all == (argc > 1)) {
    fprintf(stderr, "sieve hash: expected candidates (ARCH..., or - for stdin) or --all, not %s "
                    "(see 'sieve hash --help')\n", all ? "both" : "neither");
    return SIEVE_EXIT_USAGE;
  }

  /* The space points into the registry's components: the registry goes last. */
  g_autoptr(SieveRegistry) registry = sieve_registry_new();
  g_autoptr(GPtrArray) refused = g_ptr_array_new_with_free_func((GDestroyNotify)g_error_free);
  sieve_registry_load_default(registry, NULL, refused);
  sieve_cli_warn_refused(refused);
  g_autoptr(SieveSpace) space = sieve_cli_open_space(registry, space_name ? space_name : "nb201", overrides, "hash", &error);
  if (space == NULL)
    return sieve_cli_fail(error);

  g_autoptr(GArray) items = g_array_new(FALSE, TRUE, sizeof(Item));
  if (all) {
    double size = sieve_space_size(space);
    if (!(size <= ALL_MAX)) {
      fprintf(stderr, "sieve hash: --all: space %s has %g candidates; it enumerates at most %g\n",
              sieve_space_get_name(space), size, ALL_MAX);
      return SIEVE_EXIT_USAGE;
    }
    g_autoptr(GPtrArray) genotypes = g_ptr_array_new();
    g_autoptr(SieveGenotype) g = sieve_genotype_new(space);
    sieve_cli_enumerate(space, g, 0, genotypes);
    for (guint i = 0; i < genotypes->len; i++) {
      Item it = {.genotype = genotypes->pdata[i], .where = g_strdup_printf("candidate %u", i + 1)};
      g_array_append_val(items, it);
    }
  } else {
    gboolean stdin_read = FALSE;
    for (int i = 1; i < argc; i++) {
      if (g_str_equal(argv[i], "-")) {
        if (!stdin_read)
          read_stdin(items);
        stdin_read = TRUE;
      } else {
        add_item(items, g_strdup(argv[i]), g_strdup_printf("argument %d", i));
      }
    }
  }

  Job job = {.space = space, .structural = structural, .functional = functional,
             .items = (Item *)items->data, .n_items = items->len};
  g_mutex_init(&job.lock);
  g_cond_init(&job.cond);
  guint n_threads = threads > 0 ? (guint)threads : g_get_num_processors();
  n_threads = MAX(1, MIN(n_threads, items->len));
  /* Lua components refuse calls from other threads than their script's. */
  gboolean inline_only = sieve_lua_component_is_builtin(sieve_registry_lookup(registry, SIEVE_KIND_SPACE,
                                                                              space_name ? space_name : "nb201"));
  g_autoptr(GPtrArray) pool = g_ptr_array_new();
  for (guint t = 0; t < n_threads && items->len > 0 && !inline_only; t++)
    g_ptr_array_add(pool, g_thread_new("hash", worker, &job));

  /* Lines go out in input order as soon as each is ready. */
  guint failed = 0;
  for (guint i = 0; i < items->len; i++) {
    Item *it = &job.items[i];
    if (inline_only) {
      hash_item(&job, it);
      it->done = TRUE;
    }
    g_mutex_lock(&job.lock);
    while (!it->done)
      g_cond_wait(&job.cond, &job.lock);
    g_mutex_unlock(&job.lock);
    if (it->line) {
      puts(it->line);
    } else {
      fflush(stdout);
      fprintf(stderr, "sieve hash: %s\n", it->error);
      failed++;
    }
    g_free(it->text);
    g_free(it->where);
    g_free(it->line);
    g_free(it->error);
    sieve_genotype_free(it->genotype);
  }
  for (guint t = 0; t < pool->len; t++)
    g_thread_join(pool->pdata[t]);
  g_mutex_clear(&job.lock);
  g_cond_clear(&job.cond);
  fflush(stdout);
  if (failed > 0) {
    fprintf(stderr, "sieve hash: %u of %u candidate%s could not be hashed\n", failed, items->len,
            items->len == 1 ? "" : "s");
    return SIEVE_EXIT_FAILURE;
  }
  return SIEVE_EXIT_OK;
}
