#!/usr/bin/env bash
# Every benchmark at a small size, then ONE table of ratios against the reference servers (or the
# issue's goal where there is no reference), headed by the machine, the date (UTC) and the commit,
# so a regression shows at a glance. A benchmark: prints, never fails on a figure. A benchmark that
# fails or times out gets a "failed (see LOG)" row and the rest still run.
#
#   bench/all.sh [NAME...]        (as root) names: dhcp dhcp6 dns boot http storm store agents api
#   bench/all.sh --report DIR     the table again from a finished run's logs (no root, runs nothing)
#
# Run time: 262 s of benchmarks on 2 cores (2026-11-28), after the release build (5 min 41 s on a
# cold target, nothing when warm) and tools/setup.sh --bench.
# It builds rackboot, the agent's agent-load, rackboot-storm and the api_list example in release
# mode once, up front, with the commands the scripts use, so their own builds are no-ops.
#
#   dhcp    bench/dhcp.sh 2000 8000, PERIOD=10       vs Kea 2.2 memfile (~1 min)
#   dhcp6   bench/dhcp.sh -6 2000 8000, PERIOD=10    vs Kea 2.2 DHCPv6 memfile (~1 min)
#   dns     bench/dns.sh 10                          vs dnsmasq (~2 min)
#   boot    bench/boot.sh                            TFTP vs the better of dnsmasq and atftpd (~3 min)
#   http    bench/http.sh 1                          vs nginx (~0.5 min)
#   storm   bench/storm.sh 200                       vs dnsmasq + atftpd + nginx (~2 min)
#   store   ONLY=dhcp bench/store.sh 0 2000          rackboot on PostgreSQL vs Kea on PostgreSQL (~1 min)
#   agents  bench/agents.sh 1000 100 10              vs the goal: p99 < 50 ms, RSS < 100 MB (~0.5 min)
#   api     bench/api.sh 10000 20                    vs the goal: well under 100 ms (~0.2 min)
#
# Sizes: DHCP_RATES, PERIOD, DNS_SECS, HTTP_ROUNDS, STORM_MACHINES, STORE_RATE, AGENTS_ARGS,
# API_ARGS; BENCH_TIMEOUT (seconds per benchmark, default 900). A benchmark whose tools are
# missing after tools/setup.sh --bench (which every pair.sh benchmark runs anyway) is skipped
# with a message.
#
# Not run here: soak.sh (an hour by design), ui.sh and cmdb.sh (rackboot alone, no reference or
# goal figure to hold them to), bmc.sh (a release build of the whole test suite), deploy.sh and
# installer.sh (VMs under TCG, 10-60 minutes; installer.sh needs the internet). Run them alone.
#
# Each benchmark's full output goes to target/bench-all/<UTC date-time>/NAME.log; the table goes
# to summary.txt and, for BENCHMARKS.md, summary.md beside them.
set -euo pipefail
if [ "${1:-}" = --report ]; then  # the directory as given, before the cd below
  REPORT_DIR=$(cd "${2:-/nonexistent}" 2>/dev/null && pwd) \
    || { echo "usage: bench/all.sh --report DIR (a target/bench-all/... directory)"; exit 2; }
fi
cd "$(dirname "$0")/.."
ALL=(dhcp dhcp6 dns boot http storm store agents api)
DHCP_RATES=${DHCP_RATES:-2000 8000}
PERIOD=${PERIOD:-10}
DNS_SECS=${DNS_SECS:-10}
HTTP_ROUNDS=${HTTP_ROUNDS:-1}
STORM_MACHINES=${STORM_MACHINES:-200}
STORE_RATE=${STORE_RATE:-2000}
AGENTS_ARGS=${AGENTS_ARGS:-1000 100 10}
API_ARGS=${API_ARGS:-10000 20}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-900}

# ---- Parsers: a benchmark's log -> rows "bench<TAB>figure<TAB>rackboot<TAB>reference name<TAB>
# reference<TAB>h|l" (h: more is better, l: less is better). A cell may carry a note after its
# number ("1999 (0.02% drops)"); the ratio uses the leading number.

# dhcp.sh: "RATE | 4-way/s drops% avg max RSS CPUms/k | (Kea, same) | rb/Kea"
parse_dhcp() {
  awk -F'|' 'NF == 4 && $1 ~ /^ *[0-9]+ *$/ {
    r = $1; gsub(/ /, "", r); split($2, a, " "); split($3, b, " ")
    printf "dhcp\t4-way exchanges/s, %s/s offered\t%s (%s%% drops)\tKea 2.2\t%s (%s%% drops)\th\n", r, a[1], a[2], b[1], b[2]
    printf "dhcp\tCPU ms per 1,000 exchanges, %s/s offered\t%s\tKea 2.2\t%s\tl\n", r, a[6], b[6]
  }' "$1"
}

# dhcp.sh -6: the same table against Kea's DHCPv6 server.
parse_dhcp6() {
  parse_dhcp "$1" | sed -e 's/^dhcp\t/dhcp6\t/' -e 's/\tKea 2.2\t/\tKea 2.2 DHCPv6\t/'
}

# dns.sh: "  %-16s %-10s %12s %14s %8s %8.2f %12s" (queries, server, queries/s, avg ms, lost %,
# cores, CPU us per query), fixed width.
parse_dns() {
  awk 'function t(s) { gsub(/^ +| +$/, "", s); return s }
    /^  A/ {
      q = t(substr($0, 3, 16)); srv = t(substr($0, 20, 10)); v = t(substr($0, 31, 12))
      if (srv != "rackboot" && srv != "dnsmasq") next
      if (!(q in seen)) { seen[q] = 1; order[++n] = q }
      qps[q, srv] = v; us[q, srv] = t(substr($0, 77, 12))
    }
    # Then "  MODE SERVER changes answered p50 p99 max" (change to answer, ms).
    /^  (quiet|churn) / && ($2 == "rackboot" || $2 == "dnsmasq") {
      if (!($1 in lseen)) { lseen[$1] = 1; lorder[++m] = $1 }
      p99[$1, $2] = $6; got[$1, $2] = $4 "/" $3
    }
    END { for (i = 1; i <= n; i++) { q = order[i]
      printf "dns\tqueries/s, %s\t%s\tdnsmasq\t%s\th\n", q, qps[q, "rackboot"], qps[q, "dnsmasq"]
      printf "dns\tCPU us per query, %s\t%s\tdnsmasq\t%s\tl\n", q, us[q, "rackboot"], us[q, "dnsmasq"] }
      for (i = 1; i <= m; i++) { k = lorder[i]
      printf "dns\tchange to answer p99 ms, %s (answered)\t%s (%s)\tdnsmasq --hostsdir\t%s (%s)\tl\n", k,
        p99[k, "rackboot"], got[k, "rackboot"], p99[k, "dnsmasq"], got[k, "dnsmasq"] } }' "$1"
}

# boot.sh: "  WINDOWSIZE rackboot dnsmasq atftpd" (MB/s or "fail"), then "  SERVER failures seconds".
# The reference is the better of dnsmasq and atftpd in each row.
parse_boot() {
  awk 'function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
    /^TFTP, [0-9]+ MB file/ { s = 1; mb = $2; next }
    /^TFTP, [0-9]+ parallel/ { s = 2; n = $2; next }
    /^$/ { s = 0 }
    s == 1 && NF == 4 && $1 ~ /^[0-9]+$/ {
      ref = "dnsmasq"; v = $3
      if (num($4) && (!num(v) || $4 + 0 > v + 0)) { ref = "atftpd"; v = $4 }
      printf "boot\tTFTP MB/s, %s MB, windowsize %s\t%s\t%s\t%s\th\n", mb, $1, $2, ref, v
    }
    s == 2 && NF == 3 && ($1 == "rackboot" || $1 == "dnsmasq" || $1 == "atftpd") { f[$1] = $2; t[$1] = $3 }
    END {
      if (!("rackboot" in t)) exit
      ref = "dnsmasq"
      if (!("dnsmasq" in t) || (("atftpd" in t) && t["atftpd"] + 0 < t["dnsmasq"] + 0)) ref = "atftpd"
      # More failures than the reference is worse whatever the time: no ratio.
      d = f["rackboot"] + 0 > f[ref] + 0 ? "f" : "l"
      printf "boot\tTFTP, %s parallel 1 MB transfers (s)\t%s (%s failed)\t%s\t%s (%s failed)\t%s\n", n, t["rackboot"], f["rackboot"], ref, t[ref], f[ref], d
    }' "$1"
}

# http.sh: "  %-34s %10s %10s %8s" (label, rackboot, nginx, ratio), fixed width: a missing figure
# leaves its column blank instead of shifting the next one into it.
parse_http() {
  awk 'function t(s) { gsub(/^ +| +$/, "", s); return s }
    { l = t(substr($0, 3, 34)); rb = t(substr($0, 38, 10)); ng = t(substr($0, 49, 10)) }
    l == "1 stream, 200 MB (MB/s)"         { f = "1 stream of a 200 MB image (MB/s)"; d = "h" }
    l == "50 streams, 200 MB each (MB/s)"  { f = "50 streams of it (aggregate MB/s)"; d = "h" }
    l == "200 clients x 1 MB, wrk (req/s)" { f = "200 clients x 1 MB, wrk (req/s)"; d = "h" }
    l == "CPU seconds, all rounds"         { f = "CPU seconds over the run"; d = "l" }
    l == "peak RSS (MB)"                   { f = "peak RSS (MB)"; d = "l" }
    f != "" { printf "http\t%s\t%s\tnginx\t%s\t%s\n", f, rb, ng, d; f = "" }' "$1"
}

# storm.sh: three sections ("== rackboot: ... first poll", "== rackboot: ... initrd",
# "== dnsmasq ..."), each with rackboot-storm's "power-on -> done DONE p50 p99 max retries failed"
# row and "N of M machines done in ..." line.
parse_storm() {
  awk '/^== rackboot: .*first poll/ { s = "poll"; next }
    /^== rackboot: .*initrd/ { s = "rb"; next }
    /^== dnsmasq/ { s = "ref"; next }
    /^== / { s = "" }
    s != "" && $1 == "power-on" && $2 == "->" && $3 == "done" { p99[s] = $4 > 0 ? $6 : "-" }
    s != "" && $2 == "of" && $4 == "machines" && $5 == "done" { d[s] = $1; m[s] = $3 }
    END {
      if ("rb" in d || "ref" in d) {
        mm = m["rb"] != "" ? m["rb"] : m["ref"]
        printf "storm\tpower-on to initrd, %s machines: done\t%s\tdnsmasq + atftpd + nginx\t%s\th\n", mm, d["rb"], d["ref"]
        printf "storm\tpower-on to initrd: p99 ms\t%s\tdnsmasq + atftpd + nginx\t%s\tl\n", p99["rb"], p99["ref"]
      }
      if ("poll" in d) {
        printf "storm\tpower-on to first agent poll, %s machines: done\t%s\tgoal (all)\t%s\th\n", m["poll"], d["poll"], m["poll"]
        printf "storm\tpower-on to first agent poll: p99 ms\t%s\tgoal (at 1,000)\t30000\tl\n", p99["poll"]
      }
    }' "$1"
}

# store.sh (ONLY=dhcp): "RATE | embedded: 4-way/s drops% avg max | PostgreSQL: same | Kea on PostgreSQL: same"
parse_store() {
  awk -F'|' 'NF == 4 && $1 ~ /^ *[0-9]+ *$/ {
    r = $1; gsub(/ /, "", r); split($3, b, " "); split($4, c, " ")
    printf "store\t4-way exchanges/s on PostgreSQL, %s/s offered\t%s (%s%% drops)\tKea 2.2 on PostgreSQL\t%s (%s%% drops)\th\n", r, b[1], b[2], c[1], c[2]
  }' "$1"
}

# agents.sh: its closing "side by side" lines, "https  N agents enrolled in ... RSS X MB ...
# (M missing): median ... p99 P ms, max ..." and the same for "http".
parse_agents() {
  awk 'function after(re, s) { if (!match($0, re)) return "-"; s = substr($0, RSTART, RLENGTH)
      sub(/^ *[^ ]+ /, "", s); gsub(/[^0-9.]/, "", s); return s }
    $1 == "https" || $1 == "http" {
      mode = $1 == "https" ? "HTTPS" : "plain HTTP"
      n = $2; p99 = after(" p99 [0-9.]+ ms"); rss = after(" RSS [0-9.]+ MB")
      miss = "-"; if (match($0, /\([0-9]+ missing\)/)) { miss = substr($0, RSTART + 1, RLENGTH - 10) }
      note = (miss != "-" && miss != "0") ? " (" miss " jobs missing)" : ""
      printf "agents\tjob hand-over p99 ms, %s agents, %s\t%s%s\tgoal\t50\tl\n", n, mode, p99, note
      if ($1 == "https") printf "agents\tRSS MB, %s agents polling, HTTPS\t%s\tgoal\t100\tl\n", n, rss
    }' "$1"
}

# api.sh: "registered N machines", then "QUERY p50 p90 max bytes" rows.
parse_api() {
  awk 'function num(x) { return x ~ /^[0-9]+(\.[0-9]+)?$/ }
    /^registered [0-9]+ machines/ { m = $2 }
    NF >= 5 && $NF ~ /^[0-9]+$/ && num($(NF - 1)) && num($(NF - 2)) && num($(NF - 3)) {
      q++; if ($(NF - 2) + 0 >= worst + 0) { worst = $(NF - 2) }
      if ($1 == "first" && $2 == "page") first = $(NF - 3)
    }
    END {
      if (!q) exit
      printf "api\tfirst page of 100 at %s machines, p50 ms\t%s\tgoal\t100\tl\n", m, first
      printf "api\tslowest of %d list queries at %s machines, p90 ms\t%s\tgoal\t100\tl\n", q, m, worst
    }' "$1"
}

# ---- The table, from DIR's NAME.status and NAME.log files, in plain text and in markdown.

# rows DIR: every benchmark's rows (or its failed/skipped row), with the ratio as a 6th column.
rows() {
  local dir=$1 name status log out
  for name in "${ALL[@]}"; do
    [ -e "$dir/$name.status" ] || continue
    status=$(cat "$dir/$name.status"); log="$dir/$name.log"
    case $status in
      ok)
        out=$("parse_$name" "$log" 2>/dev/null || true)
        if [ -n "$out" ]; then printf '%s\n' "$out"; else printf '%s\t-\tno figures found (see %s)\t\t\t-\n' "$name" "$log"; fi ;;
      skipped*) printf '%s\t-\t%s\t\t\t-\n' "$name" "$status" ;;
      *) printf '%s\t-\tfailed: %s (see %s)\t\t\t-\n' "$name" "$status" "$log" ;;
    esac
  done | awk -F'\t' -v OFS='\t' 'function lead(s) { return match(s, /^[0-9]+(\.[0-9]+)?/) ? substr(s, 1, RLENGTH) + 0 : -1 }
    { if ($3 == "") $3 = "-"
      a = lead($3); b = lead($5); r = "-"
      if ($6 == "h" && a >= 0 && b > 0) r = sprintf("%.2f", a / b)
      if ($6 == "l" && a > 0 && b >= 0) r = sprintf("%.2f", b / a)
      if ($6 == "f") r = "worse: failures"
      ref = $4 == "" ? "-" : ($5 == "" ? $4 ": -" : $4 ": " $5)
      print $1, $2, $3, ref, r }'
}

ORIENTATION="ratio: above 1 means rackboot is better (rackboot / reference where more is better, reference / rackboot where less is better)"

report() {
  local dir=$1 head rows_tsv
  head=$(cat "$dir/machine" 2>/dev/null || echo "machine, date and commit not recorded")
  rows_tsv=$(rows "$dir")
  {
    echo "$head"
    echo "$ORIENTATION"
    printf 'benchmark\tfigure\trackboot\treference\tratio\n%s\n' "$rows_tsv" | awk -F'\t' '
      { for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR }
      END { for (r = 1; r <= n; r++) {
        line = ""; for (i = 1; i <= 5; i++) line = line sprintf(i == 5 ? "%" w[i] "s" : "%-" w[i] "s | ", c[r, i])
        print line
        if (r == 1) { line = ""; for (i = 1; i <= 5; i++) { d = ""; for (j = 0; j < w[i]; j++) d = d "-"; line = line d (i < 5 ? "-+-" : "") } print line } } }'
  } > "$dir/summary.txt"
  {
    echo "**$head**"
    echo
    echo "${ORIENTATION^}."
    echo
    echo "| benchmark | figure | rackboot | reference | ratio |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "$rows_tsv" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }'
  } > "$dir/summary.md"
  echo
  cat "$dir/summary.txt"
  echo
  echo "Markdown for BENCHMARKS.md (also in $dir/summary.md):"
  echo
  cat "$dir/summary.md"
}

if [ -n "${REPORT_DIR:-}" ]; then
  report "$REPORT_DIR"
  exit 0
fi

# ---- The run.
[ "$(id -u)" = 0 ] || { echo "benchmarks run as root (network namespaces)"; exit 1; }
trap 'echo; echo "interrupted: no table (the logs so far are in ${OUT:-target/bench-all})"; exit 130' INT
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"
[ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
unset PROFILE ONLY
NAMES=("$@")
[ ${#NAMES[@]} -gt 0 ] || NAMES=("${ALL[@]}")
for n in "${NAMES[@]}"; do
  [[ " ${ALL[*]} " == *" $n "* ]] || { echo "unknown benchmark $n (one of: ${ALL[*]})"; exit 2; }
done
STAMP=$(date -u +%Y-%m-%dT%H%M%SZ)
OUT=target/bench-all/$STAMP
mkdir -p "$OUT"

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit (with uncommitted changes)"
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
mem=$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)
# shellcheck disable=SC1091
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")
echo "${cpu:-unknown CPU}, $(nproc) cores, $mem, ${os:-unknown OS}; $(date -u '+%Y-%m-%d %H:%M') UTC; commit $commit" > "$OUT/machine"
echo "== $(cat "$OUT/machine")"
echo "== logs: $OUT"

if [[ " ${NAMES[*]} " =~ \ (dhcp|dhcp6|dns|boot|http|storm|store)\  ]]; then
  echo "== tools/setup.sh --bench (what every namespace benchmark runs first; log: $OUT/setup.log)"
  bash tools/setup.sh --bench > "$OUT/setup.log" 2>&1 \
    || echo "   setup failed (see $OUT/setup.log): benchmarks whose tools are missing are skipped"
fi

echo "== release build (rackboot, agent-load, rackboot-storm, examples/api_list; log: $OUT/build.log)"
t0=$SECONDS
if ! { cargo build --release --locked -p rackboot -p rackboot-agent &&  # as bench/agents.sh
       cargo build --release --locked -p rackboot -p rackboot-storm &&  # as bench/storm.sh
       cargo build --release --locked --example api_list; } > "$OUT/build.log" 2>&1; then  # as bench/api.sh
  tail -20 "$OUT/build.log"
  echo "release build failed (see $OUT/build.log)"; exit 1
fi
echo "   $((SECONDS - t0)) s"

# needs NAME TOOL...: the tools NAME runs that are not on PATH, if any, as its skip reason.
needs() {
  local miss=() t
  for t in "${@:2}"; do [ -z "$t" ] || command -v "$t" >/dev/null 2>&1 || miss+=("$t"); done
  [ ${#miss[@]} = 0 ] || echo "skipped: not installed: ${miss[*]}"
}
initdb_missing() { compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || echo initdb; }

# run NAME SKIP_REASON COMMAND...: COMMAND's output to NAME.log, its outcome to NAME.status.
run() {
  local name=$1 skip=$2 rc=0 t0=$SECONDS
  shift 2
  if [ -n "$skip" ]; then
    echo "== $name: $skip"; echo "$skip" > "$OUT/$name.status"; return
  fi
  echo "== $name: $* (log: $OUT/$name.log)"
  # --foreground: Ctrl-C reaches the benchmark, whose EXIT trap tears its namespaces down.
  timeout --foreground -k 30 "$BENCH_TIMEOUT" "$@" > "$OUT/$name.log" 2>&1 < /dev/null || rc=$?
  [ "$rc" != 130 ] || kill -INT $$  # it was Ctrl-C: stop here too (the trap above)
  case $rc in
    0) echo ok ;;
    124|137) echo "timed out after $BENCH_TIMEOUT s" ;;
    *) echo "exit $rc" ;;
  esac > "$OUT/$name.status"
  echo "   $((SECONDS - t0)) s, $(cat "$OUT/$name.status")"
}

read -r -a rates <<< "$DHCP_RATES"
read -r -a agents_args <<< "$AGENTS_ARGS"
read -r -a api_args <<< "$API_ARGS"
base=(ip taskset curl)
for name in "${NAMES[@]}"; do
  case $name in
    dhcp) run dhcp "$(needs dhcp "${base[@]}" kea-dhcp4 perfdhcp)" env PERIOD="$PERIOD" bench/dhcp.sh "${rates[@]}" ;;
    dhcp6) run dhcp6 "$(needs dhcp6 "${base[@]}" kea-dhcp6 perfdhcp)" env PERIOD="$PERIOD" bench/dhcp.sh -6 "${rates[@]}" ;;
    dns) run dns "$(needs dns "${base[@]}" dnsmasq dnsperf dig)" bench/dns.sh "$DNS_SECS" ;;
    boot) run boot "$(needs boot "${base[@]}" dnsmasq atftpd atftp)" bench/boot.sh ;;
    http) run http "$(needs http "${base[@]}" nginx wrk)" bench/http.sh "$HTTP_ROUNDS" ;;
    storm) run storm "$(needs storm "${base[@]}" dnsmasq atftpd nginx)" bench/storm.sh "$STORM_MACHINES" ;;
    store) run store "$(needs store "${base[@]}" kea-dhcp4 kea-admin perfdhcp psql runuser "$(initdb_missing)")" \
             env ONLY=dhcp PERIOD="$PERIOD" bench/store.sh 0 "$STORE_RATE" ;;
    agents) run agents "$(needs agents curl)" bench/agents.sh "${agents_args[@]}" ;;
    api) run api "" bench/api.sh "${api_args[@]}" ;;
  esac
done

report "$OUT"
