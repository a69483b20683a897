#!/usr/bin/env python3
"""Drive `sandbox serve` from Python: the warm path for a harness in another language.

One `sandbox serve` process stays up; each tool call is one JSON line in and one JSON line out
(the object of `sandbox run --json`, plus the request's id). Requests may overlap: answers
come as they finish, matched by id. Closing stdin ends serve once the work in flight is done.

    python3 examples/serve.py [path/to/sandbox]    # default: target/release/sandbox

Standard library only. Run from anywhere: the workspace is a fresh directory under /var/tmp.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "target", "release", "sandbox"))
    workspace = tempfile.mkdtemp(prefix="sbx-serve-example-", dir="/var/tmp")
    try:
        with subprocess.Popen(
            [exe, "serve"], cwd=workspace, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        ) as serve:

            def ask(request: dict) -> None:
                serve.stdin.write(json.dumps(request) + "\n")
                serve.stdin.flush()

            def answer() -> dict:
                line = serve.stdout.readline()
                if not line:
                    raise RuntimeError("sandbox serve ended early")
                return json.loads(line)

            ask({"id": "hello", "argv": ["/bin/echo", "confined"]})
            a = answer()
            print(f"{a['id']}: {a['stdout'].strip()} (exit {a['exit_code']}, level {a['level']})")
            print("guarantees: " + ",".join(a["guarantees"]))

            # Two calls in flight: the fast one is answered first.
            ask({"id": "slow", "command": "sleep 0.5; echo slow"})
            ask({"id": "fast", "command": "echo fast"})
            first, second = answer(), answer()
            print(f"answered as they finished: {first['id']}, {second['id']}")

            # The workspace is writable, the rest of the host is not.
            ask({"id": "write", "command": "echo made > made.txt && cat made.txt; touch /etc/x 2>/dev/null || echo denied"})
            w = answer()
            print("workspace write, host write: " + " / ".join(w["stdout"].split()))

            # A timeout and a bad request, each answered with error and message.
            ask({"id": "late", "command": "sleep 10", "timeout": 0.2})
            late = answer()
            print(f"late: {late['error']}")
            ask({"id": "typo", "argv": ["/bin/true"], "time_out": 1})
            typo = answer()
            print(f"typo: {typo['error']}: {typo['message']}")

            # Back to back, as an agent's tool calls come.
            took = []
            for i in range(20):
                start = time.perf_counter()
                ask({"id": i, "argv": ["/bin/true"]})
                if answer()["exit_code"] != 0:
                    raise RuntimeError("a call failed")
                took.append((time.perf_counter() - start) * 1000)
            print(f"20 calls back to back: median {statistics.median(took):.1f} ms")

            serve.stdin.close()
            serve.wait(timeout=30)
        print(f"serve exit status: {serve.returncode}")
        return serve.returncode
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
