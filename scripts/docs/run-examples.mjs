#!/usr/bin/env node
// Runs every example listed in examples.json (beside this file) and checks its declared
// output: each pattern must match a line of stdout, in order, the last line must equal `last`
// when given, and the example must exit 0. An entry with `command` runs that (from the root;
// the Python harness driving `sandbox serve`) instead of a Rust example binary. Exits non-zero
// on any mismatch. No dependencies.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");
const manifest = JSON.parse(readFileSync(join(here, "examples.json"), "utf8"));
let failed = 0;
let passed = 0;

const build = spawnSync("cargo", ["build", "--locked", "--release", "--quiet", "-p", "sandbox-examples", "--examples"], {
  cwd: root,
  stdio: "inherit",
});
const cli = spawnSync("cargo", ["build", "--locked", "--release", "--quiet", "-p", "sandbox-cli", "--bin", "sandbox"], {
  cwd: root,
  stdio: "inherit",
});
if (build.status !== 0 || cli.status !== 0) {
  console.error("run-examples: building the examples or the CLI failed");
  process.exit(1);
}

for (const { example, command, expect, last } of manifest.examples) {
  const [program, ...args] = command ?? [join(root, "target", "release", "examples", example)];
  const run = spawnSync(program, args, { cwd: root, encoding: "utf8", timeout: 120_000 });
  const lines = (run.stdout ?? "").split("\n").filter((l) => l.length > 0);
  const problems = [];
  if (run.error) problems.push(`could not run: ${run.error.message}`);
  if (run.status !== 0) problems.push(`exit status ${run.status} (signal ${run.signal}); stderr: ${run.stderr}`);
  let at = 0;
  for (const pattern of expect) {
    const re = new RegExp(pattern);
    const found = lines.findIndex((l, i) => i >= at && re.test(l));
    if (found < 0) {
      problems.push(`no line matching /${pattern}/ after line ${at}`);
    } else {
      at = found + 1;
    }
  }
  if (last !== undefined && lines[lines.length - 1] !== last) {
    problems.push(`last line is ${JSON.stringify(lines[lines.length - 1])}, expected ${JSON.stringify(last)}`);
  }
  if (problems.length === 0) {
    passed += 1;
    console.log(`example ${example} ... ok`);
  } else {
    failed += 1;
    console.log(`example ${example} ... FAILED`);
    for (const p of problems) console.log(`  ${p}`);
    console.log(`  stdout:\n${run.stdout}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
