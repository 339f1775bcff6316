//! A child's side of a `--processes` run (`--worker-process`): connect, answer the parent's two start
//! barriers, run the workload with [`crate::run::run_with`] — the same loop as an in-process run — and
//! print the [`ChildResult`].

use std::io::BufRead;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{mpsc, watch};

use super::ChildResult;
use crate::cli::{NodeSource, Plan};
use crate::nodes::addr::NodeUrl;
use crate::nodes::health::Health;
use crate::run::{run_with, RunContext, Stages};
use crate::worker::Control;

/// How often a child reports its progress.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// The parent's `go` lines, and whether the parent is still there (its end of our stdin is open).
struct Gate {
    go: mpsc::UnboundedReceiver<()>,
    gone: watch::Receiver<bool>,
}

impl Gate {
    /// Reads stdin on a plain thread (a tokio stdin read would hold up the runtime's shutdown).
    fn open() -> Self {
        let (go_tx, go) = mpsc::unbounded_channel();
        let (gone_tx, gone) = watch::channel(false);
        std::thread::Builder::new()
            .name("loadgen-stdin".into())
            .spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    match line {
                        Ok(l) if l.trim() == "go" => {
                            if go_tx.send(()).is_err() {
                                break;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
                let _ = gone_tx.send(true);
            })
            .expect("a thread starts");
        Self { go, gone }
    }

    async fn wait(&mut self) -> Result<(), String> {
        self.go
            .recv()
            .await
            .ok_or_else(|| "the parent loadgen went away".to_string())
    }

    /// Resolves once the parent has closed our stdin.
    async fn gone(mut rx: watch::Receiver<bool>) {
        let _ = rx.wait_for(|g| *g).await;
    }
}

/// Writes one protocol line on stdout.
fn say(line: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A child's stages: each phase starts on the parent's `go` (so all children start together), and the
/// measured phase's progress goes to the parent as `done N` lines.
struct InChild<'a> {
    gate: &'a mut Gate,
    /// When the last `done` line was sent (time since the measured phase began).
    last: Duration,
}

impl Stages for InChild<'_> {
    async fn connected(&mut self) -> Result<(), String> {
        say("ready");
        self.gate.wait().await
    }

    async fn warmed(&mut self) -> Result<(), String> {
        say("warm");
        self.gate.wait().await
    }

    fn tick(&mut self, ctl: &Control, elapsed: Duration) {
        // Ticks come every 100 ms; a line every PROGRESS_EVERY is enough for the parent's bar.
        if elapsed >= self.last + PROGRESS_EVERY {
            self.last = elapsed;
            say(&format!("done {}", ctl.done.load(Ordering::Relaxed)));
        }
    }
}

/// The whole life of a worker process (`--worker-process`): connect, two barriers, measure, report.
pub async fn child(plan: &Plan) -> Result<(), String> {
    let tag = plan.child.as_deref().unwrap_or("00");
    let NodeSource::Existing(urls) = &plan.nodes else {
        return Err("a worker process needs --nodes".into());
    };
    let nodes = urls
        .iter()
        .map(|u| NodeUrl::parse(u))
        .collect::<Result<Vec<_>, _>>()?;
    let health = Health::start(&nodes)?;
    let ctx = RunContext {
        urls,
        health: &health,
        workload: &plan.workload,
        quiet: true,
    };
    let kind = plan.engines[0];
    let waiting = kind.has_waiting().then(|| plan.waiting[0]);
    let mut gate = Gate::open();
    let gone = Gate::gone(gate.gone.clone());
    let stages = InChild {
        gate: &mut gate,
        last: Duration::ZERO,
    };
    let run = run_with(kind, waiting, &ctx, &plan.scenarios[0], tag, stages);
    let out = tokio::select! {
        out = run => out?,
        () = gone => return Err("the parent loadgen went away".into()),
    };
    let json = serde_json::to_string(&ChildResult::pack(&out))
        .map_err(|e| format!("cannot encode the result: {e}"))?;
    say(&format!("result {json}"));
    Ok(())
}
