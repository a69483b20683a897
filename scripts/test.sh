#!/usr/bin/env bash
# The test command: sets up a fresh machine, then runs formatting, lints, every test of the
# workspace and the macOS type-check. Run as root to include the privileged suite (runc/crun,
# namespaces); as root that suite is REQUIRED (SANDBOX_REQUIRE_PRIVILEGED=1) and fails rather
# than skips when it cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh

if [ "$(id -u)" = 0 ]; then
  export SANDBOX_REQUIRE_PRIVILEGED=1
else
  echo "test: WARNING: not root: the privileged suite (runc, crun) will print SKIPPED and not run"
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo check for macOS (aarch64-apple-darwin)"
cargo check --locked --target aarch64-apple-darwin -p sandbox-bundle -p sandbox-seatbelt -p sandbox -p sandbox-cli
echo "== cargo test --workspace"
cargo test --workspace --locked 2>&1 | tee target/test-output.txt
if [ "${SANDBOX_REQUIRE_PRIVILEGED:-}" = 1 ] && grep -q "SKIPPED privileged test" target/test-output.txt; then
  echo "test: a privileged test was skipped although it is required"; exit 1
fi
for suite in linux_conformance linux_lifecycle linux_no_landlock linux_no_userns linux_processes linux_grants linux_abuse linux_roots linux_protect linux_protect_guard linux_egress; do
  if [ "${SANDBOX_REQUIRE_PRIVILEGED:-}" = 1 ] && ! grep -q "Running tests/$suite.rs" target/test-output.txt; then
    echo "test: the privileged suite $suite did not run"; exit 1
  fi
done
echo "== fuzz targets, brief (20 s each, one at a time; 600 s each: bash scripts/fuzz.sh)"
bash scripts/fuzz.sh --brief 2>&1 | tee target/fuzz-output.txt
if [ "$(id -u)" = 0 ]; then
  echo "== the examples and their declared output"
  cargo run --locked --release --quiet --example stage-11-sandbox-process
  node scripts/docs/run-examples.mjs
  echo "== the spawn benchmark, short mode (no thresholds: it only must not rot)"
  cargo build --locked --release -p sandbox-cli --bin sandbox
  cargo run --locked --release -p sandbox-tests --bin spawn-bench -- --quick --throughput --json target/spawn-bench.json
  echo "== the Linux suites again as an unprivileged user (rootless, with a delegated cgroup)"
  bash scripts/rootless.sh
  echo "== the Linux suites again as a user for whom root prepared nothing (no cgroup)"
  SANDBOX_ROOTLESS_PLAIN=1 bash scripts/rootless.sh
  echo "== the CLI as that user: nothing prepared, the probe's fix, a simulated cgroup v2 host"
  bash scripts/plain-user.sh
fi
# One closing line for the whole run: the cargo tests, the harness-less suites and the examples.
total=$(grep -ohE "test result: ok\. [0-9]+ passed|^[0-9]+ passed, 0 failed" target/test-output.txt \
  | grep -oE "[0-9]+ passed" | awk '{s += $1} END {print s + 0}')
echo "test: all checks passed"
echo "summary: $total passed, 0 failed"
