#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ (cargo-fuzz, libFuzzer) one after the other, never in parallel.
#
#   bash scripts/fuzz.sh --brief        # every target ~20 s (CI)
#   bash scripts/fuzz.sh                # every target 600 s (the issue-8 acceptance run)
#   bash scripts/fuzz.sh [--brief] T..  # only the named targets
#
# Installs what a fresh machine lacks (a minimal nightly toolchain, cargo-fuzz), prints one
# summary line per target and fails if any target crashes. Crashing inputs land in
# fuzz/artifacts/<target>/; new corpus entries in fuzz/corpus/<target>/ (both git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=600
if [[ "${1:-}" == "--brief" ]]; then
    secs=20
    shift
fi
export PATH="$HOME/.cargo/bin:$PATH"

if ! command -v rustup >/dev/null; then
    echo "fuzz: rustup is required (https://rustup.rs)" >&2
    exit 1
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

if [[ $# -gt 0 ]]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs" "${TMPDIR:-/tmp}"/sandbox-fuzz-*' EXIT
failed=()
summary=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    dirs=("fuzz/corpus/$t")
    [[ -d "fuzz/seeds/$t" ]] && dirs+=("fuzz/seeds/$t")
    echo "fuzz: $t: running for ${secs} s" >&2
    if cargo +nightly fuzz run "$t" "${dirs[@]}" -- -max_total_time="$secs" -print_final_stats=1 \
        >"$logs/$t.log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -n1)
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$logs/$t.log" | tail -n1)
        summary+=("fuzz: $t: ok: ${runs:-?} runs in ${secs} s (${rate:-?} exec/s), no crash")
    else
        tail -n 60 "$logs/$t.log" >&2
        summary+=("fuzz: $t: FAILED (log above; crashing input under fuzz/artifacts/$t/)")
        failed+=("$t")
    fi
done
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz: failed: ${failed[*]}" >&2
    exit 1
fi
