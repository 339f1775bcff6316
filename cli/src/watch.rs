//! `watch RESOURCE`: `inspect` every `--every` until Ctrl-C (or `--count` refreshes). On a terminal
//! the screen is redrawn; otherwise each view follows the last (`--json`: one object per line).

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::args::Options;
use crate::exit::{usage, Failure};
use crate::show;

pub async fn run(
    opts: &Options,
    resource: &str,
    every: Duration,
    count: Option<u64>,
) -> Result<u8, Failure> {
    let engine = crate::connect::engine(opts, None).await?;
    let redraw = std::io::stdout().is_terminal() && !opts.json;
    let mut ticker = tokio::time::interval(every.max(Duration::from_millis(10)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut shown = 0u64;
    while count.is_none_or(|n| shown < n) {
        tokio::select! {
            _ = &mut ctrl_c => break,
            _ = ticker.tick() => {}
        }
        let seen = engine.inspect(resource).await.map_err(usage)?;
        if redraw {
            // Home and clear, then the view: a steady picture instead of a scrolling log.
            print!("\x1b[H\x1b[2J");
        } else if shown > 0 && !opts.json {
            println!();
        }
        show::inspection(&seen, opts.json);
        let _ = std::io::stdout().flush();
        shown += 1;
    }
    Ok(0)
}
