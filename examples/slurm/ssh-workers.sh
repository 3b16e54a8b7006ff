#!/bin/bash
# sieve workers over SSH: one `sieve worker` per host of a list, each with
# the study's URL in its environment (not on a command line).
#
#   export SIEVE_STORE_URL='postgresql://sieve@db.example.org/sieve?study=nb201'
#   examples/slurm/ssh-workers.sh hosts.txt [THREADS]
#
# hosts.txt: one host a line.  Each host needs sieve, the plugins and the
# data at the same paths, and the password in its ~/.pgpass (or peer
# authentication); the workers exit when the study is finished.
set -euo pipefail
hosts=${1:?usage: ssh-workers.sh HOSTS_FILE [THREADS]}
threads=${2:-1}
: "${SIEVE_STORE_URL:?set SIEVE_STORE_URL to the study's postgresql:// URL}"
while read -r host; do
  [[ -z "$host" || "$host" == \#* ]] && continue
  # The URL travels on ssh's standard input, read into the environment there.
  printf '%s\n' "$SIEVE_STORE_URL" |
    ssh -o BatchMode=yes "$host" "read -r SIEVE_STORE_URL; export SIEVE_STORE_URL; exec sieve worker - --threads $threads" \
      > "sieve-worker-$host.log" 2>&1 &
done < "$hosts"
wait
