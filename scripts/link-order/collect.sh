#!/usr/bin/env bash
# Regenerates scripts/link-order/helper.order: the functions a spawn's helper (the zygote's
# worker, `sbx-worker`) runs, in the order the kernel first faulted them in, so that the linker
# places them side by side (scripts/link-order/build.rs says why).
#
#     sudo scripts/link-order/collect.sh [--fresh] [ROUNDS]     # ROUNDS per binary, default 25
#
# Needs root and `perf`. Each round records the page faults of the workers of a few spawns
# (`perf record -e minor-faults -d`), takes the function at every fault on code of our own
# binary, appends the new ones to the file and relinks. A fault shows only the first function
# touched in each 64 KiB the kernel maps; once those sit together, the next round shows the
# functions that were hidden behind them, so the list converges in a few dozen rounds. Run after
# large changes to the helper's path, then commit the file; the benchmark's "helper's peak
# RSS" row shows the effect. --fresh starts from an empty file (stale names are otherwise kept:
# the linker skips a name its binary lacks).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
order=$root/scripts/link-order/helper.order
fresh=0
if [[ ${1:-} == --fresh ]]; then
  fresh=1
  shift
fi
rounds=${1:-25}
[[ $(id -u) == 0 ]] || { echo "collect.sh: needs root (perf records every process's faults)" >&2; exit 2; }
command -v perf > /dev/null || { echo "collect.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
[[ $fresh == 1 ]] && : > "$order"
touch "$order"
work=$(mktemp -d /var/tmp/sbx-link-order.XXXXXX)
trap 'rm -rf "$work"' EXIT

# One round: run $2 (a shell command) under perf, append the new functions faulted in code of
# binary $1, print the counts.
round() {
  local bin=$1 cmd=$2
  (cd "$work" && perf record -q -e minor-faults -c 1 -d -a -o "$work/perf.data" -- sh -c "$cmd" > /dev/null 2>&1) || true
  perf script -i "$work/perf.data" --comm sbx-worker --no-demangle -F addr,ip,sym,dso 2> /dev/null > "$work/faults.txt" || true
  python3 - "$order" "$(basename "$bin")" "$work/faults.txt" << 'PY'
import sys

order, name, faults = sys.argv[1:4]
have = [l.strip() for l in open(order) if l.strip()]
seen, new, code_faults = set(have), [], 0
for line in open(faults):
    # "ADDR SYM (DSO) IP SYM (DSO)": a code fault is one whose address is its instruction's.
    if f"/{name})" not in line or ")" not in line:
        continue
    addr, rest = line.split()[0], line.split(")", 1)[1].split()
    if not rest or addr != rest[0]:
        continue
    code_faults += 1
    sym = rest[1] if len(rest) > 1 else ""
    if sym and not sym.startswith("[") and sym not in seen:
        seen.add(sym)
        new.append(sym)
with open(order, "a") as f:
    f.writelines(s + "\n" for s in new)
print(f"{name}: {code_faults} code faults, {len(new)} new functions, {len(have) + len(new)} in the file")
sys.exit(0 if new else 3)
PY
}

# Each binary that carries the helper, with the spawns that exercise it.
converge() {
  local bin=$1 cmd=$2
  shift 2
  for _ in $(seq "$rounds"); do
    cargo build --locked --release --quiet "$@"
    round "$bin" "$cmd" || return 0
  done
}
bench=$root/target/release/spawn-bench
cli=$root/target/release/sandbox
stage11=$root/target/release/examples/stage-11-sandbox-process
bench_spawns="$bench --quick --only 'sandbox library'; $bench --quick --only library"
cli_spawns="$cli run -- sh -c 'echo hi; sleep 0.3'; $cli run --json -- false; echo '{\"id\":1,\"op\":\"run\",\"argv\":[\"true\"]}' | $cli serve; $cli proof"
converge "$bench" "$bench_spawns" -p sandbox-tests --bin spawn-bench
converge "$cli" "$cli_spawns" -p sandbox-cli --bin sandbox
converge "$stage11" "$stage11" -p sandbox-examples --example stage-11-sandbox-process
# Symbol names carry a hash of each crate's resolved features, which depend on the packages a
# cargo invocation builds: the ones above are CI's and scripts/proof.sh's; these are the
# README's `cargo build --release` at the root.
converge "$bench" "$bench_spawns"
converge "$cli" "$cli_spawns"
echo "collect.sh: $(wc -l < "$order") functions in $order"
