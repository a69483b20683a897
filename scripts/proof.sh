#!/usr/bin/env bash
# The main job. Until the in-process Linux backend lands, the proof is: export the bundle that
# sandbox compiles for `echo confined` under a denied-network, isolated-home, read-write
# workspace profile, and run it unchanged with `runc run`. Needs root (for runc) and sets up
# what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh
cargo build --locked --release -p sandbox --bin sandbox

work=$(mktemp -d /var/tmp/sandbox-proof.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/workspace"
cat > "$work/profile.json" <<JSON
{
  "workspace_root": "$work/workspace",
  "workspace_read": "allow", "workspace_write": "allow",
  "host_read": "allow", "host_write": "deny",
  "network": "deny", "command": "allow",
  "home": "isolated", "isolation": "sandboxed"
}
JSON
./target/release/sandbox bundle export --out "$work/bundle" --profile "$work/profile.json" \
  --cwd "$work/workspace" -- /bin/sh -c 'echo confined'
echo "profile fingerprint: $(grep -o '"sandbox.fingerprint": "[0-9a-f]*"' "$work/bundle/config.json" | grep -o '[0-9a-f]\{64\}')"
status=0
runc run --bundle "$work/bundle" "sandbox-proof-$$" || status=$?
echo "exit status: $status"
exit "$status"
