//! `leader NAME [--watch]`: the election's leader as a majority of nodes shows it — one line,
//! `VALUE (term T)` (`--json`: `{"value":..,"term":..,"revision":..}`); exit 0 with a leader, 1
//! without, 3 when the nodes cannot tell. With `--watch`, the current leader and then one line per
//! change (the library's `observe`: notifications, not polling) until Ctrl-C or SIGTERM.

use std::io::Write;

use redlock_engine::{ErrorClass, Leader, LockError};
use serde::Serialize;

use crate::args::Options;
use crate::exit::{usage, Failure, FAILED, UNAVAILABLE};

pub async fn run(opts: &Options, name: &str, watch: bool) -> Result<u8, Failure> {
    let engine = crate::connect::engine(opts, None).await?;
    let election = engine.election(name);
    if !watch {
        return match election.leader().await {
            Ok(Some(leader)) => {
                print(&leader, opts.json);
                Ok(0)
            }
            Ok(None) => {
                eprintln!("redlock: no leader of {name:?}");
                Ok(FAILED)
            }
            Err(e) => Err(unknown(name, e)),
        };
    }
    let mut changes = election.observe().map_err(usage)?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Failure::new(FAILED, format!("cannot handle signals: {e}")))?;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            _ = &mut ctrl_c => return Ok(0),
            _ = term.recv() => return Ok(0),
            next = changes.next() => match next {
                Some(leader) => print(&leader, opts.json),
                None => return Err(Failure::new(FAILED, "the engine stopped")),
            },
        }
    }
}

/// The leader could not be read: too few nodes answered (3), or the name is refused (2).
fn unknown(name: &str, e: LockError) -> Failure {
    match e.class() {
        ErrorClass::Invalid => usage(e),
        _ => Failure::new(
            UNAVAILABLE,
            format!("cannot tell the leader of {name:?}: {e}"),
        ),
    }
}

#[derive(Serialize)]
struct Shown<'a> {
    value: &'a str,
    term: u64,
    revision: u64,
}

/// One line per leader; a value that is not UTF-8 is shown with replacement characters, control
/// characters escaped (one leader, one line).
fn print(leader: &Leader, json: bool) {
    let value = String::from_utf8_lossy(&leader.value);
    let line = if json {
        serde_json::to_string(&Shown {
            value: &value,
            term: leader.term,
            revision: leader.revision,
        })
        .expect("a leader serializes")
    } else {
        format!("{} (term {})", one_line(&value), leader.term)
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_shown_on_one_line() {
        assert_eq!(one_line("10.0.0.7:80"), "10.0.0.7:80");
        assert_eq!(one_line("a\nb\tc"), "a\\nb\\tc");
    }
}
