#!/usr/bin/env bash
# Issue 15, end to end with the CLI, as an ordinary user. Must be run as root (it makes the user
# and, for the later parts, what root would make); called by scripts/test.sh.
#   1. A user for whom root prepared nothing: `sandbox run` prints, `--json` claims the
#      boundaries and not resource-limits, `sandbox proof` is confined, `sandbox probe` names the
#      cgroup fix, and a fork bomb ends at its deadline leaving no process.
#   2. The probe's own fix, run as root as printed, then SANDBOX_CGROUP_PARENT: the same user's
#      runs claim resource-limits and the fork bomb is contained.
#   3. A simulated cgroup v2 host (in a private mount namespace: the v2 hierarchy bound over
#      /sys/fs/cgroup; the host's v1 hierarchies are not touched), with a root-made cgroup
#      delegated to the user and the user's shell moved into it as systemd does: the library finds
#      and uses it without any flag; this host's pids and memory controllers are on v1, so the
#      delegation has none and resource-limits is reported unenforced with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
[ "$(id -u)" = 0 ] || { echo "plain-user.sh: run as root"; exit 1; }

user=sandbox-plain
id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
uid=$(id -u "$user")
cargo build --locked --quiet -p sandbox-cli --bin sandbox
dir=$(mktemp -d /var/tmp/sandbox-plain.XXXXXX)
v2=sbx-plain-delegated-$$
cleanup() {
  for c in /sys/fs/cgroup/*/; do [ -d "${c}sandbox-$uid" ] && find "${c}sandbox-$uid" -depth -type d -exec rmdir {} + 2>/dev/null; done
  [ -d "/sys/fs/cgroup/unified/$v2" ] && find "/sys/fs/cgroup/unified/$v2" -depth -type d -exec rmdir {} + 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
cp target/debug/sandbox "$dir/"
mkdir "$dir/home" "$dir/ws"
chown "$user:$user" "$dir/home" "$dir/ws"
chmod 755 "$dir"
as_user() {
  (cd "$dir/ws" && setpriv --reuid="$user" --regid="$user" --clear-groups \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$dir/home" "$@")
}
fail() { echo "plain-user.sh: FAILED: $*"; exit 1; }
check_json() { # file, python expression over d (the JSON), what
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1" || {
    cat "$1"; fail "$3"; }
}
bomb() { # marker, extra env...: a fork bomb under a 4 s deadline; no process may be left
  local marker=$1; shift
  set +e
  as_user "$@" "$dir/sandbox" run --timeout 4 -- bash -c "exec 2>/dev/null; while :; do sleep $marker & done" \
    > "$dir/bomb.out" 2>&1
  local code=$?
  set -e
  [ "$code" = 125 ] && grep -q "deadline exceeded" "$dir/bomb.out" || { cat "$dir/bomb.out"; fail "the bomb did not end at its deadline ($code)"; }
  sleep 0.5
  if pgrep -f "sleep $marker" >/dev/null; then fail "the bomb left processes: $(pgrep -fc "sleep $marker")"; fi
}

echo "== 1. nothing prepared ($user, uid $uid)"
out=$(as_user "$dir/sandbox" run -- echo hi) || fail "sandbox run -- echo hi exited $?"
[ "$out" = hi ] || fail "sandbox run printed '$out'"
as_user "$dir/sandbox" run --json -- true > "$dir/run.json" || fail "sandbox run --json -- true"
check_json "$dir/run.json" "all(g in d['guarantees'] for g in ['process-boundary','write-boundary','read-boundary','network-boundary']) and 'resource-limits' not in d['guarantees']" \
  "the guarantees of a run without a cgroup"
check_json "$dir/run.json" "[e for e in d['report'] if e['feature']=='resource-limits'][0]['status']=='unenforced' and 'fix:' in [e for e in d['report'] if e['feature']=='resource-limits'][0]['detail']" \
  "resource-limits must be unenforced with the fix"
as_user "$dir/sandbox" proof > "$dir/proof.txt" || { cat "$dir/proof.txt"; fail "sandbox proof"; }
grep -qx confined "$dir/proof.txt" && grep -qx "exit status: 0" "$dir/proof.txt" \
  && grep -q "^report: resource-limits: unenforced: " "$dir/proof.txt" || { cat "$dir/proof.txt"; fail "the proof's output"; }
as_user "$dir/sandbox" probe --text > "$dir/probe.txt" || fail "sandbox probe --text"
grep -q "^- cgroup: " "$dir/probe.txt" && grep -q "SANDBOX_CGROUP_PARENT=/sandbox-$uid" "$dir/probe.txt" \
  || { cat "$dir/probe.txt"; fail "the probe must name the cgroup fix"; }
as_user "$dir/sandbox" probe --json > "$dir/probe.json" || fail "sandbox probe --json"
check_json "$dir/probe.json" "d['available'] and d['lifetime_containment']=='enforced' and [f for f in d['findings'] if f['layer']=='cgroup']" \
  "probe --json: available, containment measured, the cgroup finding"
bomb 62.1501
echo "ok: confined without a cgroup; the fork bomb ended at its deadline and left nothing"

echo "== 2. the probe's fix, run as root as printed, then SANDBOX_CGROUP_PARENT=/sandbox-$uid"
fix=$(python3 -c "import json,sys; f=[f for f in json.load(open(sys.argv[1]))['findings'] if f['layer']=='cgroup'][0]['fix']; print(f.split('\`')[1])" "$dir/probe.json")
echo "+ $fix"
bash -c "$fix"
as_user SANDBOX_CGROUP_PARENT="/sandbox-$uid" "$dir/sandbox" run --json -- true > "$dir/run2.json" || fail "run with the parent"
check_json "$dir/run2.json" "'resource-limits' in d['guarantees']" "with SANDBOX_CGROUP_PARENT the run claims resource-limits"
bomb 62.1502 SANDBOX_CGROUP_PARENT="/sandbox-$uid"
echo "ok: with the delegated parent the runs claim resource-limits; the fork bomb was contained"

echo "== 3. a simulated cgroup v2 host with a delegated cgroup, no flag"
if [ -f /sys/fs/cgroup/cgroup.controllers ] || [ ! -d /sys/fs/cgroup/unified ]; then
  echo "plain-user.sh: this host has no hybrid v2 hierarchy to simulate a v2 host with"; exit 1
fi
unshare -m --propagation private bash -euc '
  dir=$1; user=$2; v2=$3
  mount --bind /sys/fs/cgroup/unified /sys/fs/cgroup
  mkdir "/sys/fs/cgroup/$v2"
  chown -R "$user:$user" "/sys/fs/cgroup/$v2"
  echo $$ > "/sys/fs/cgroup/$v2/cgroup.procs"
  cd "$dir/ws"
  u() { setpriv --reuid="$user" --regid="$user" --clear-groups env -i PATH=/usr/bin:/bin HOME="$dir/home" "$@"; }
  u "$dir/sandbox" run --json -- true > "$dir/run3.json"
  u "$dir/sandbox" run -- sleep 3 &
  sleep 1.5
  ls "/sys/fs/cgroup/$v2" | grep -q "^sbx-" || { echo "no spawn cgroup under /$v2"; exit 1; }
  wait
  u "$dir/sandbox" probe --json > "$dir/probe3.json"
  echo $$ > /sys/fs/cgroup/cgroup.procs
' - "$dir" "$user" "$v2" || fail "the simulated v2 host"
check_json "$dir/run3.json" "'resource-limits' not in d['guarantees'] and any(e['feature']=='resource-limits' and e['status']=='unenforced' and 'cgroup under /$v2' in e['detail'] and 'pids is not delegated' in e['detail'] for e in d['report'])" \
  "the found delegation is used and its missing controllers reported"
check_json "$dir/probe3.json" "d['cgroup']['version']=='v2' and d['cgroup']['parent']=='/$v2' and any(f['layer']=='cgroup' and 'pids is not delegated' in f['missing'] for f in d['findings'])" \
  "probe on the simulated v2 host"
echo "ok: the delegated cgroup /$v2 was found and used without a flag; resource-limits unenforced: no controllers delegated"
echo "plain-user.sh: all checks passed"
