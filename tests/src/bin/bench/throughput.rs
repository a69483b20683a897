//! `--throughput`: concurrent tool calls from a tokio program, ours against bwrap.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::{Deadline, Executor, ExecutorSet};

use super::{bwrap, median_p95, timed, which};

/// Calls per second and p95 in ms.
pub type Rate = (f64, f64);

/// `calls` tool calls, 4 at a time, from a tokio program: calls/s and p95 (ms), under sustained
/// load. Each contender first makes 4 untimed calls, 4 at a time: for us, one per executor, so
/// the timed calls find what an agent session's later calls find (the executor's warm
/// container), not the first spawn of a new executor, which the row "library cold (new set)"
/// times; bwrap gets the same warm-up (its binary and libraries in the page cache).
pub fn throughput(set: &Arc<ExecutorSet>, ws: &Path, calls: usize) -> Result<(Rate, Option<Rate>), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(4).build().map_err(|e| e.to_string())?;
    let run = |f: &Arc<dyn Fn(usize) -> Result<(), String> + Send + Sync>, calls: usize| {
        runtime.block_on(async {
            let sem = Arc::new(tokio::sync::Semaphore::new(4));
            let mut tasks = Vec::new();
            for i in 0..calls {
                let (f, sem) = (Arc::clone(f), Arc::clone(&sem));
                tasks.push(tokio::spawn(async move {
                    let _permit = sem.acquire_owned().await.map_err(|e| e.to_string())?;
                    tokio::task::spawn_blocking(move || {
                        let t = Instant::now();
                        f(i).map(|()| t.elapsed())
                    })
                    .await
                    .map_err(|e| e.to_string())?
                }));
            }
            let mut times = Vec::new();
            for t in tasks {
                times.push(t.await.map_err(|e| e.to_string())??);
            }
            Ok::<_, String>(times)
        })
    };
    let measure = |f: Arc<dyn Fn(usize) -> Result<(), String> + Send + Sync>| -> Result<(f64, f64), String> {
        run(&f, 4)?;
        let start = Instant::now();
        let mut times: Vec<Duration> = run(&f, calls)?;
        let elapsed = start.elapsed().as_secs_f64();
        Ok((calls as f64 / elapsed, median_p95(&mut times).1))
    };
    let executors: Vec<Arc<Executor>> =
        (0..4).map(|k| set.executor(&format!("tp-{k}"))).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    let ws_owned = ws.to_path_buf();
    let ours = measure(Arc::new(move |i| {
        executors[i % 4]
            .run_argv(&Deadline::after(Duration::from_secs(60)), &ws_owned, &["/bin/echo", "confined"])
            .map(|_| ())
            .map_err(|e| e.to_string())
    }))?;
    let bw = if which("bwrap") {
        let ws_s = ws.display().to_string();
        Some(measure(Arc::new(move |_| timed(&mut bwrap(&ws_s)).map(|_| ())))?)
    } else {
        None
    };
    Ok((ours, bw))
}
