#!/usr/bin/env bash
# Runs the Linux suites (every linux_* test binary) again as an unprivileged user,
# with a cgroup subtree that root created and delegated to that user (what a rootless embedder
# on a cgroup v1/hybrid host needs: CONTRACT.md §15.7). Must be run as root; called by
# scripts/test.sh. `bash scripts/rootless.sh SUITE [TEST...]` runs one suite (for example
# linux_conformance), and only the named tests of it when some are given.
#
# With SANDBOX_ROOTLESS_PLAIN=1 the suites run instead as a user for whom root prepared nothing
# (issue 15): no cgroup parent at all, so the runs are confined without cgroup limits and the
# suites expect `resource-limits` unenforced.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
[ "$(id -u)" = 0 ] || { echo "rootless.sh: run as root (it creates the user and the delegation)"; exit 1; }

plain=${SANDBOX_ROOTLESS_PLAIN:-}
if [ "$plain" = 1 ]; then user=sandbox-plain; parent=; else user=sandbox-rootless; parent=/sandbox-rootless; fi
id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"

if [ "$plain" = 1 ]; then
  : # nothing prepared
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  mkdir -p "/sys/fs/cgroup$parent"
  echo "+pids +memory +cpu" > /sys/fs/cgroup/cgroup.subtree_control || true
  # The delegated parent's CPU weight is what all the user's sandboxes together get against the
  # host's processes (a spawn's own weight only divides it): the delegator sets it low.
  echo 10 > "/sys/fs/cgroup$parent/cpu.weight" || true
  chown -R "$user:$user" "/sys/fs/cgroup$parent"
  echo "+pids +memory +cpu" > "/sys/fs/cgroup$parent/cgroup.subtree_control" || true
else
  for c in /sys/fs/cgroup/*/; do
    c=${c%/}
    [ "$(basename "$c")" = unified ] && continue
    [ -L "$c" ] && continue
    mkdir -p "$c$parent"
    # As on v2: the parent's CPU weight (cpu.shares; 102 = weight 10) is the delegator's.
    [ -f "$c$parent/cpu.shares" ] && echo 102 > "$c$parent/cpu.shares"
    if [ -f "$c/cpuset.cpus" ]; then
      cat "$c/cpuset.cpus" > "$c$parent/cpuset.cpus"
      cat "$c/cpuset.mems" > "$c$parent/cpuset.mems"
    fi
    chown -R "$user:$user" "$c$parent"
  done
fi

bins=$(cargo test --locked --no-run --message-format=json -p sandbox-tests 2>/dev/null \
  | grep -o '"executable":"[^"]*/linux_[a-z_]*-[0-9a-f]*"' | cut -d'"' -f4)
[ -n "$bins" ] || { echo "rootless.sh: no test binaries found"; exit 1; }
dir=$(mktemp -d /var/tmp/sandbox-rootless.XXXXXX)
trap 'umount -l "$dir/small-fs" 2>/dev/null || true; rm -rf "$dir"' EXIT
# A small filesystem owned by the user for linux_abuse's disk-full cases (it cannot mount one).
mkdir "$dir/small-fs"
mount -t tmpfs -o size=32m,mode=0700,uid="$(id -u "$user")",gid="$(id -g "$user")",nosuid,nodev tmpfs "$dir/small-fs"
cp target/debug/sandbox-probe "$dir/"
for b in $bins; do cp "$b" "$dir/"; done
mkdir "$dir/home"
chown "$user:$user" "$dir/home"
chmod 755 "$dir" "$dir"/*
chmod 700 "$dir/small-fs"

only=${1:-}
[ $# -gt 0 ] && shift
status=0
ran=0
for b in "$dir"/linux_*; do
  [ -n "$only" ] && [ "$(basename "$b" | sed 's/-[0-9a-f]*$//')" != "$only" ] && continue
  ran=$((ran + 1))
  echo "== rootless ($user, cgroup parent ${parent:-none}): $(basename "$b")"
  (cd "$dir/home" && setpriv --reuid="$user" --regid="$user" --clear-groups \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$dir/home" SANDBOX_TEST_ROOTLESS=1 \
    SANDBOX_TEST_CGROUP_PARENT="$parent" SANDBOX_PROBE_BIN="$dir/sandbox-probe" \
    SANDBOX_TEST_SMALL_FS="$dir/small-fs" RUST_BACKTRACE=1 "$b" "$@") || status=1
done
# Every suite must have run: a missing binary is a failure, never a silent gap.
want=$(ls tests/tests | grep -c '^linux_.*\.rs$')
if [ -n "$only" ]; then want=1; fi
[ "$ran" = "$want" ] || { echo "rootless.sh: $ran suites ran, expected $want"; status=1; }
exit $status
