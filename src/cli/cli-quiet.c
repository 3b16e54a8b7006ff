/* sieve: what `sieve run --quiet` still prints of the progress: why a study
 * stopped short of its budget (bug hunt 4: with -q a study that ended early
 * said nothing about why).  The engine writes these as progress messages;
 * the progress of a quiet run goes through this filter, which keeps those
 * lines (and the warning of a stored trial skipped, on standard error as
 * without any progress) and drops the trials' and activities' lines. */
#define _GNU_SOURCE /* fopencookie */
#include <stdio.h>
#include <string.h>

#include "cli/cli-private.h"

typedef struct {
  FILE *to;     /* borrowed */
  GString *line; /* the line being written */
} Filter;

/* The engine's lines that say a study stops before its budget is spent. */
static gboolean
says_why_stopped(const char *line)
{
  return g_str_has_prefix(line, "stopping: ") ||
         (g_str_has_prefix(line, "optimizer '") && g_str_has_suffix(line, "' has no more candidates"));
}

static ssize_t
filter_write(void *cookie, const char *buf, size_t size)
{
  Filter *f = cookie;
  for (size_t i = 0; i < size; i++) {
    if (buf[i] != '\n') {
      g_string_append_c(f->line, buf[i]);
      continue;
    }
    if (says_why_stopped(f->line->str)) {
      fprintf(f->to, "%s\n", f->line->str);
      fflush(f->to);
    } else if (strstr(f->line->str, ": pending trial ") != NULL && strstr(f->line->str, " skipped: ") != NULL) {
      /* A stored trial that cannot be read back: a warning, where the
       * engine puts it when it has no progress at all. */
      fprintf(stderr, "sieve: %s\n", f->line->str);
    }
    g_string_truncate(f->line, 0);
  }
  return (ssize_t) size;
}

static int
filter_close(void *cookie)
{
  Filter *f = cookie;
  g_string_free(f->line, TRUE);
  g_free(f);
  return 0;
}

FILE *
sieve_cli_quiet_stream_new(FILE *to)
{
  Filter *f = g_new0(Filter, 1);
  f->to = to;
  f->line = g_string_new(NULL);
  cookie_io_functions_t io = {.write = filter_write, .close = filter_close};
  FILE *stream = fopencookie(f, "w", io);
  if (stream == NULL)
    filter_close(f);
  return stream;
}
