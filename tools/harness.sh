# The test command's stages and background jobs, each under a time limit (sourced by
# tools/test.sh; tests/it/house/test_command.rs drives it alone). Nothing here waits without a bound:
#
#   stage NAME LIMIT COMMAND...   runs COMMAND (under `set -e`) in a process group of its own,
#                                 its output shown as it comes and kept in $HARNESS_DIR; prints
#                                 its wall and CPU seconds. Past LIMIT seconds it prints the
#                                 stage's name, the last 40 lines of its output and the
#                                 processes still running under it, ends them and returns 124.
#   job NAME LIMIT COMMAND...     the same in the background (call it with `&`, then `launched
#                                 NAME...`): output in target/NAME.log, status in target/NAME.rc
#   ready NAME                    waits for job NAME, prints its log, returns its status; fails
#                                 at once, naming the job, when the job ended without a status
#   run_limit SECONDS             ends every running stage and job once the whole run has taken
#                                 SECONDS (RACKBOOT_TEST_TIMEOUT), naming each
#   end_all                       ends every stage and job still running (an interrupted run)
#
# A stage's processes are found two ways: its process group, and the variable
# RACKBOOT_TEST_STAGE=<run>/<stage> in their environment, which children that start sessions of
# their own (setsid, daemons) keep. Only those are ended: nothing else on the machine.
HARNESS_DIR=${HARNESS_DIR:-target/test-run}
HARNESS_RUN=${HARNESS_RUN:-$$}
rm -rf "$HARNESS_DIR/running" "$HARNESS_DIR/why" "$HARNESS_DIR/run.expired" "$HARNESS_DIR/times"
mkdir -p "$HARNESS_DIR/running"
CLK_TCK=$(getconf CLK_TCK)

# ticks: sets TICKS to the CPU time (user and system, in clock ticks) of this shell's
# waited-for children so far (read in this shell: a command substitution is another process).
ticks() {
  local stat
  read -r stat < "/proc/$BASHPID/stat"
  set -- ${stat##*) }
  TICKS=$(( ${14} + ${15} ))
}

# slug NAME: a file name for a stage: its first words, lower case.
slug() {
  local s=${1,,}
  s=${s//[^a-z0-9]/-}
  s=${s:0:40}
  echo "${s%-}"
}

# stage_pids SLUG PGID: the processes of a stage, by group and by the marker in their environment.
stage_pids() {
  local marker="RACKBOOT_TEST_STAGE=$HARNESS_RUN/$1" pgid=$2
  {
    ps -e -o pid=,pgid= | awk -v g="$pgid" '$2 == g { print $1 }'
    grep -lzxF "$marker" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
  } | sort -un | grep -vx "$BASHPID" || true
}

# expire NAME SLUG PGID LIMIT LOG WHY: the report of a stage past its limit, then its end: SIGTERM,
# and SIGKILL for what still runs 10 s later.
expire() {
  local name=$1 slug=$2 pgid=$3 limit=$4 log=$5 why=$6 pids
  : > "$HARNESS_DIR/$slug.expired"
  echo "== $name: past $why; its last 40 lines:"
  tail -n 40 "$log" | sed 's/^/  | /'
  pids=$(stage_pids "$slug" "$pgid")
  echo "== $name: processes still running under it (ending them):"
  # shellcheck disable=SC2086
  [ -n "$pids" ] && ps -o pid=,etime=,args= -p $(echo $pids | tr ' ' ,) | cut -c1-200 | sed 's/^/  | /'
  kill -TERM -- "-$pgid" 2>/dev/null || true
  # shellcheck disable=SC2086
  [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
  for _ in $(seq 20); do
    [ -z "$(stage_pids "$slug" "$pgid")" ] && return 0
    sleep 0.5
  done
  pids=$(stage_pids "$slug" "$pgid")
  echo "== $name: still running 10 s after SIGTERM, killed: $pids"
  kill -KILL -- "-$pgid" 2>/dev/null || true
  # shellcheck disable=SC2086
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
  return 0
}

# limited NAME LIMIT COMMAND...: COMMAND under its limit (see `stage`), without the stage lines.
limited() {
  local name=$1 limit=$2 slug pid watchdog rc=0; shift 2
  if ! [[ $limit =~ ^[1-9][0-9]*$ ]]; then
    echo "== $name: the limit \`$limit\` is not a number of seconds (stage NAME LIMIT COMMAND...)"
    return 2
  fi
  slug=$(slug "$name")
  local log=$HARNESS_DIR/$slug.log
  rm -f "$HARNESS_DIR/$slug.expired"
  : > "$log"
  # A process group of its own (job control on for this one fork), so that it can be ended whole;
  # its input is not the terminal, which the job is no longer in the foreground of.
  set -m
  {
    set +m
    export RACKBOOT_TEST_STAGE="$HARNESS_RUN/$slug"
    set -o pipefail
    (set -e; "$@") 2>&1 | tee -a "$log"
  } </dev/null &
  pid=$!
  set +m
  # The watchdog: expires the stage at its limit, or at once on SIGUSR1 (`end_all`). It outlives
  # a Ctrl-C (which reaches the lanes, not the stage's group) and a closed output, so that the
  # run's exit can still end the stage through it.
  (
    trap '' INT HUP PIPE
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    trap 'kill "$s" 2>/dev/null; expire "$name" "$slug" "$pid" "$limit" "$log" "$(cat "$HARNESS_DIR/why" 2>/dev/null)"
          rm -f "$HARNESS_DIR/running/$slug"; exit 0' USR1
    sleep "$limit" & s=$!
    wait "$s"
    expire "$name" "$slug" "$pid" "$limit" "$log" "its limit of $limit s"
    rm -f "$HARNESS_DIR/running/$slug"
  ) &
  watchdog=$!
  echo "$watchdog $name" > "$HARNESS_DIR/running/$slug"
  wait "$pid" || rc=$?
  # An expiring watchdog is let finish (it ends the stage's other processes); an idle one is stopped.
  [ -e "$HARNESS_DIR/$slug.expired" ] || kill -TERM "$watchdog" 2>/dev/null || true
  wait "$watchdog" 2>/dev/null || true
  rm -f "$HARNESS_DIR/running/$slug"
  if [ -e "$HARNESS_DIR/$slug.expired" ]; then
    echo "== $name: ended (past its limit; above: its last lines and processes)"
    return 124
  fi
  return "$rc"
}

# stage NAME LIMIT COMMAND...: see the top of this file.
stage() {
  local name=$1 limit=$2 t0=$SECONDS c0 rc=0; shift 2
  ticks; c0=$TICKS
  echo "== $name (limit $limit s)"
  # Not `limited ... || rc=$?`: bash ignores `set -e` in everything a `||` runs, subshells
  # included, so a failing command inside a stage's function would not stop it.
  local e=${-//[^e]/}
  set +e
  limited "$name" "$limit" "$@"
  rc=$?
  [ -z "$e" ] || set -e
  ticks
  echo "== $name: $((SECONDS - t0)) s ($(( (TICKS - c0) / CLK_TCK )) s of CPU)"
  printf '%6d %6d  %s\n' "$((SECONDS - t0))" "$limit" "$name" >> "$HARNESS_DIR/times"
  return "$rc"
}

# job NAME LIMIT COMMAND...: see the top of this file.
job() {
  local name=$1 limit=$2 t0=$SECONDS rc=0; shift 2
  local e=${-//[^e]/}
  set +e  # (as in `stage`)
  limited "$name" "$limit" "$@" >"target/$name.log" 2>&1
  rc=$?
  [ -z "$e" ] || set -e
  printf '%6d %6d  %s (in the background)\n' "$((SECONDS - t0))" "$limit" "$name" >> "$HARNESS_DIR/times"
  echo "$rc" > "target/$name.rc"
}

# print_times: each stage's and job's seconds beside its limit, the largest share first.
print_times() {
  echo "== seconds and limits (tools/test.sh's L_* figures):"
  awk '{ printf "%5.0f%% %s\n", 100 * $1 / $2, $0 }' "$HARNESS_DIR/times" | sort -rn | sed 's/^/  /'
}

# launched NAME...: records the background process just started (`$!`) as the one that writes
# each NAME's status; clears any status an earlier run left.
launched() {
  local pid=$!
  for n in "$@"; do
    rm -f "target/$n.rc"
    echo "$pid" > "target/$n.pid"
  done
}

# ready NAME: see the top of this file.
ready() {
  local rc=target/$1.rc pid
  pid=$(cat "target/$1.pid" 2>/dev/null) || { echo "ready: job $1 was never started"; return 1; }
  while [ ! -s "$rc" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      sleep 0.5  # its status may be on its way
      [ -s "$rc" ] && break
      echo "ready: background job $1 (pid $pid) ended without writing its status ($rc); its last lines:"
      tail -n 40 "target/$1.log" 2>/dev/null | sed 's/^/  | /'
      return 1
    fi
    sleep 1
  done
  sed "s/^/$1 | /" "target/$1.log"
  return "$(cat "$rc")"
}

# end_all WHY: expires every stage and job still running (each names itself in its lane), and
# waits (up to 30 s) until they have ended.
end_all() {
  local f watchdog name
  echo "$1" > "$HARNESS_DIR/why"
  for f in "$HARNESS_DIR"/running/*; do
    [ -e "$f" ] || continue
    read -r watchdog name < "$f"
    echo "== ending $name: $1"
    kill -USR1 "$watchdog" 2>/dev/null || rm -f "$f"
  done
  for _ in $(seq 60); do
    [ -z "$(ls -A "$HARNESS_DIR/running")" ] && return 0
    sleep 0.5
  done
}

# run_limit SECONDS: see the top of this file. Sets RUN_WATCHDOG (kill it when the run ends).
run_limit() {
  RUN_LIMIT=$1
  (
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    sleep "$RUN_LIMIT" & s=$!
    wait "$s"
    : > "$HARNESS_DIR/run.expired"
    echo "== the run has taken its limit of $RUN_LIMIT s (RACKBOOT_TEST_TIMEOUT): ending what still runs"
    end_all "the whole run's limit of $RUN_LIMIT s (RACKBOOT_TEST_TIMEOUT)"
  ) &
  RUN_WATCHDOG=$!
}
