#!/usr/bin/env bash
# The main job: the stage-11 proof (CONTRACT.md §20). `echo confined` runs in a
# denied-network, isolated-home micro-container through the embedded runtime; the proof prints
# the output, the level, the guarantees and the report the OS actually enforced. Sets up what is
# missing first. Run it as root (or as a user with a delegated cgroup subtree).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh
exec cargo run --locked --release --quiet --example stage-11-sandbox-process
