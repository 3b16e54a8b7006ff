/* sieve: the command line: one function per command.
 * Not installed: not part of the plugin ABI. */
#pragma once

#include <glib.h>
#include <sieve/sieve.h>

G_BEGIN_DECLS

/* ==== commands ==== */
/* sieve: the `sieve` command's subcommands (one file each). */

/* Exit codes: 0 success, 1 a run-time failure, 2 a usage or config error,
 * 130 interrupted. */
enum { SIEVE_EXIT_OK = 0, SIEVE_EXIT_FAILURE = 1, SIEVE_EXIT_USAGE = 2, SIEVE_EXIT_INTERRUPTED = 130 };

int sieve_cmd_run(int argc, char **argv);
int sieve_cmd_plugins(int argc, char **argv);
int sieve_cmd_export(int argc, char **argv);
int sieve_cmd_store(int argc, char **argv);
int sieve_cmd_worker(int argc, char **argv);
int sieve_cmd_report(int argc, char **argv);
int sieve_cmd_serve(int argc, char **argv);
int sieve_cmd_train(int argc, char **argv);
int sieve_cmd_lua(int argc, char **argv);
int sieve_cmd_hash(int argc, char **argv);
int sieve_cmd_proxies(int argc, char **argv);
int sieve_cmd_model(int argc, char **argv);
int sieve_cmd_final(int argc, char **argv);
int sieve_cmd_latency(int argc, char **argv);

/* The space plugin name with the --set space.KEY=VALUE overrides, for
 * `sieve COMMAND`; one that builds no networks is refused. (transfer full) */
SieveSpace *sieve_cli_open_space(SieveRegistry *registry, const char *name, char **overrides, const char *command,
                                 GError **error);
/* Appends every genotype of a finite space to out (transfer full each),
 * first decision slowest, from decision d of g on (call with a fresh
 * genotype and d = 0); decisions their conditions switch off stay NAN. */
void sieve_cli_enumerate(const SieveSpace *space, SieveGenotype *g, guint d, GPtrArray *out);

/* Whether output (a file a command is about to write, what: how the user
 * named it, e.g. "--output") is neither the study store store nor one of
 * its SQLite side files (-wal, -shm, -journal); otherwise a
 * SIEVE_ERROR_CONFIG naming both.  Call it before writing anything.  A
 * postgresql:// store or a NULL output passes. */
gboolean sieve_cli_check_output(const char *store, const char *output, const char *what, GError **error);
/* Whether output can be written, checked before any work that ends in
 * writing it: not a folder; a device or a pipe that takes writing; else
 * its folder exists and takes new files (the file is written beside it and
 * renamed over it).  Else a SIEVE_ERROR_CONFIG naming what and the path
 * (exit status 2).  NULL passes. */
gboolean sieve_cli_check_writable(const char *output, const char *what, GError **error);
/* cli-study.c: the folder a stored study's relative paths are read
 * against (meta config_dir, else the config's path as stored).
 * (transfer full) */
char *sieve_cli_study_dir(SieveStore *store);

/* The Lua hosts of a stored study's lua.load scripts, run for `sieve
 * report` and `sieve serve` to rebuild a space they register. */
typedef struct {
  GPtrArray *hosts; /* (nullable) each freed after the space it made */
  gboolean loaded;  /* tried: the store held a config */
  char *failure;    /* (nullable) why a script did not load */
} SieveCliStudyLua;
void sieve_cli_study_lua_clear(SieveCliStudyLua *lua);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SieveCliStudyLua, sieve_cli_study_lua_clear)
/* sieve_report_load after the stored study's lua.load scripts ran into
 * registry (once, the first call that finds the config); when the space
 * cannot be rebuilt because a script did not load, the page's note says
 * so. lua must outlive *space. (transfer full) */
struct _SieveReport *sieve_cli_report_load(SieveStore *store, SieveRegistry *registry, SieveCliStudyLua *lua,
                                           SieveSpace **space, GError **error);

/* cli-model-files.c: the files a model file's space read ("space_files"). */
/* The space's name, its options (every path absolute) and the texts of the
 * files it read (UTF-8, at most 1 MiB each) in w's metadata. */
gboolean sieve_cli_model_describe_space(SieveWeights *w, const SieveSpace *space, GError **error);
/* The files of "space_files" that this machine lacks or holds otherwise,
 * copied to a folder of their own for as long as the space is created. */
typedef struct {
  char *dir;
  GHashTable *copies; /* path as written -> its copy */
} SieveCliRestored;
void sieve_cli_restored_clear(SieveCliRestored *r);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SieveCliRestored, sieve_cli_restored_clear)
/* Reads json (a model file's "space_files", origin naming it in errors)
 * into r: each file unchanged here is read in place, the others copied. */
gboolean sieve_cli_restore_files(SieveCliRestored *r, const char *json, const char *origin, GError **error);
/* Points every path of a space's options (those of a Lua space when lua,
 * and of its parts) that r copied at the copy, and a copied Lua script's
 * require at its own folder.  r nullable. */
void sieve_cli_restored_apply(const SieveCliRestored *r, SieveNode *options, gboolean lua);
/* FALSE and an error at the text when a path option of spec in options (a
 * model file's space options) is not absolute, or a text of options names
 * something that exists and is neither a regular file nor a folder, or a
 * file of size 0 under /proc or /sys: reading a FIFO would block for ever,
 * a device (/dev/urandom) or /proc/self/pagemap fill memory. */
gboolean sieve_cli_model_check_paths(const SieveOptionSpec *spec, const SieveNode *options, GError **error);

/* A numeric option read as text (G_OPTION_ARG_STRING), so that a value
 * given is never mistaken for "not given": NULL text leaves *value (the
 * default) alone; otherwise it must be a whole number in [min, max], or a
 * finite number above min (above_min) or at least min, and at most max
 * (INFINITY: no bound).  Else a G_OPTION_ERROR naming flag, the text and
 * the range (exit status 2). */
gboolean sieve_cli_parse_int(const char *flag, const char *text, gint64 min, gint64 max, gint64 *value,
                             GError **error);
gboolean sieve_cli_parse_double(const char *flag, const char *text, double min, gboolean above_min, double max,
                                double *value, GError **error);

/* Print "sieve: message" to stderr and return the exit code that fits the
 * error (2 for config errors, 1 otherwise). */
int sieve_cli_fail(GError *error);
/* A flag (as given: "--epochs 3") and the --set override of the same
 * option section.key: refused, naming both, since the two would disagree
 * with no way to tell which one counts (sieve train, sieve final). */
void sieve_cli_set_both_error(GError **error, const char *flag, const char *override, const char *section,
                              const char *key);
/* Print each refused plugin as a warning. */
void sieve_cli_warn_refused(GPtrArray *refused);

G_END_DECLS
