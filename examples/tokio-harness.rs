//! An async agent harness (tokio) that runs several tool calls concurrently, each on the
//! executor of its tool, through the blocking pool: the sandbox's API is blocking, and its
//! runtime never runs inside this multithreaded process (the helper is re-executed).

use std::sync::Arc;
use std::time::Duration;

use sandbox::{Access, Deadline, ExecutorSet, ExecutorSetOptions, Profile, ProfileConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    sandbox::init();
    let base = std::env::temp_dir().join(format!("sandbox-tokio-example-{}", std::process::id()));
    let workspace = base.join("ws");
    // The scratch root lies beside the workspace, never inside it: a scratch root the workload
    // could write is refused (`InvalidOptions` naming `scratch_root`).
    let scratch = base.join("scratch");
    std::fs::create_dir_all(&workspace)?;
    std::fs::create_dir_all(&scratch)?;
    let result = harness(&workspace, &scratch);
    let _ = std::fs::remove_dir_all(&base);
    result
}

fn harness(workspace: &std::path::Path, scratch: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let profile = Profile::new(ProfileConfig {
        workspace_root: workspace.to_path_buf(),
        workspace_read: Access::Allow,
        workspace_write: Access::Allow,
        host_read: Access::Allow,
        command: Access::Allow,
        ..ProfileConfig::default()
    })?;
    let set = Arc::new(ExecutorSet::new(
        &Deadline::after(Duration::from_secs(30)),
        &profile,
        ExecutorSetOptions::new(scratch).max_executors(4),
    )?);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(4).build()?;
    let calls = ["echo one", "echo two; echo two-err >&2", "pwd", "sh -c 'exit 3'", "uname -s", "echo six"];
    let outputs = runtime.block_on(async {
        let tasks: Vec<_> = calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let (set, cwd, call) = (Arc::clone(&set), workspace.to_path_buf(), (*call).to_owned());
                tokio::task::spawn_blocking(move || {
                    let exec = set.executor(&format!("tool-{}", i % 4))?;
                    exec.run_command(&Deadline::after(Duration::from_secs(30)), &cwd, &call).map(|o| (call, o))
                })
            })
            .collect();
        let mut outputs = Vec::new();
        for task in tasks {
            outputs.push(task.await.map_err(|e| e.to_string()));
        }
        outputs
    });
    for output in outputs {
        let (call, out) = output??;
        let text = String::from_utf8_lossy(&out.bytes).replace(&workspace.display().to_string(), "<workspace>");
        println!("{call:?} -> {:?}: {}", out.status, text.trim_end().replace('\n', " | "));
    }
    match Arc::try_unwrap(set) {
        Ok(set) => set.close()?,
        Err(_) => return Err("the set is still shared".into()),
    }
    println!("done");
    Ok(())
}
