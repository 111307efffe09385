# What bench/run and bench/flatness share: sourced, with PGPORT (the Postgres on 127.0.0.1
# they use) and SECRET (the servers' JWT secret) set.

# psql on the Postgres the run uses, as its superuser
pg() { psql -h 127.0.0.1 -p "$PGPORT" -U postgres "$@"; }

# the machine's CPU ticks since boot, all and stolen by the hypervisor (/proc/stat: `cpu user
# nice system idle iowait irq softirq steal`), and the share stolen since such a reading
ticks() { awk '/^cpu / {print $2+$3+$4+$5+$6+$7+$8+$9, $9; exit}' /proc/stat; }
stolen_since() {
  read -r all stolen <<<"$1"
  read -r all_now stolen_now <<<"$(ticks)"
  awk -v a=$((all_now - all)) -v s=$((stolen_now - stolen)) 'BEGIN {printf "%.1f%%", 100 * s / (a > 0 ? a : 1)}'
}

# start_server BINARY PORT DATABASE LOG: a release server on 127.0.0.1:PORT for DATABASE (which
# it creates and migrates), its connector proxy the load generator's (PROXY_PORT), its output
# appended to LOG; returns once it answers, with its pid in `server_pid`; fails (and stops it)
# if it exits or does not answer within 10 s.
start_server() {
  WORKFLOW_BACKEND_JWT_SECRET=$SECRET WORKFLOW_BACKEND_BIND=127.0.0.1:$2 RUST_LOG=warn \
    WORKFLOW_BACKEND_CONNECTOR_PROXY_URL=http://127.0.0.1:$PROXY_PORT \
    WORKFLOW_BACKEND_DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/$3?sslmode=disable" \
    "$1" >>"$4" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$2/v1.0/status" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$4"; return 1; }
    sleep 0.1
  done
  echo "the server on port $2 did not answer within 10 s" >&2
  kill "$server_pid" 2>/dev/null
  cat "$4"
  return 1
}

# preload DATABASE N: N finished order instances with their messages and tasks
# (bench/preload.sql, no ANALYZE: as a busy database whose statistics lag), then what the
# preload leaves to do, done before the cases, not charged to the first case that meets it
# (with autovacuum off none of it gives the planner statistics); sets `state` to what the
# planner has.
preload() {
  pg -q -v ON_ERROR_STOP=1 -v n="$2" -d "$1" -f bench/preload.sql >/dev/null
  # - the GIN indexes' pending entries merged (else the case whose insert overflows a
  #   pending list merges the preload's entries while its batch waits);
  pg -q -d "$1" -c \
    "SELECT gin_clean_pending_list(c.oid) FROM pg_class c JOIN pg_am a ON a.oid = c.relam
     WHERE a.amname = 'gin' AND c.relkind = 'i'" >/dev/null
  # - where autovacuum is on, its first pass over the preloaded tables (which does analyse
  #   them, as autovacuum would before long);
  state="not analysed"
  if [ "$(pg -Atc "SHOW autovacuum")" = on ]; then
    state="autovacuum's first pass not over after 300 s"
    for _ in $(seq 1 300); do
      [ "$(pg -d "$1" -Atc \
        "SELECT count(*) FROM pg_stat_user_tables
         WHERE relname IN ('process_instances', 'tasks', 'message_instances')
           AND last_autovacuum IS NOT NULL AND last_autoanalyze IS NOT NULL")" = 3 ] &&
        state="vacuumed and analysed by autovacuum" && break
      sleep 1
    done
  fi
  # - the dirty pages written out, not by a checkpoint during the cases.
  pg -qc "CHECKPOINT" >/dev/null
}
