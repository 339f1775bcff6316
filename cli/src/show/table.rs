//! Human tables: one header line, then one row per node, columns padded to their widest cell.
//! No "ours" column: the CLI's own engine never holds the locks it inspects (`--json` keeps it).

use std::fmt::Write;
use std::time::Duration;

use redlock_engine::{
    ForceRelease, Inspection, KeyState, LockKind, NodeError, NodeStatus, QuarantineState, Verdict,
};

/// Pads every column to its widest cell (the last one is left as it is).
fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}  ", width = widths[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// `uptime_in_seconds` is whole seconds: `0s`, `42s`, then as [`dur`].
fn uptime(d: std::time::Duration) -> String {
    if d.as_secs() < 60 {
        format!("{}s", d.as_secs())
    } else {
        dur(d)
    }
}

fn opt(d: Option<std::time::Duration>) -> String {
    d.map_or("-".into(), dur)
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// The kind's name as the engine gives it (one list of kinds, in the engine: a kind added there is
/// shown here with no edit).
pub fn kind(k: Option<LockKind>) -> &'static str {
    k.map_or("-", LockKind::name)
}

pub fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Held => "held",
        Verdict::Free => "free",
        _ => "undecided",
    }
}

pub fn not_voting(why: &Option<NodeError>) -> String {
    match why {
        None => "yes".into(),
        Some(NodeError::Quarantined) => "no (quarantined)".into(),
        Some(NodeError::ClockJump) => "no (clock jump)".into(),
        Some(other) => format!("no ({other})"),
    }
}

pub fn inspection(seen: &Inspection) -> String {
    let resource = escape(&String::from_utf8_lossy(&seen.resource));
    let mut out = format!(
        "{resource}: {} (held on {}, free on {} voting nodes of {}; a majority is {})\n",
        verdict(seen.verdict).to_uppercase(),
        seen.held_on,
        seen.free_on,
        seen.nodes.len(),
        seen.quorum
    );
    let mut rows = vec![[
        "NODE", "VOTES", "STATE", "KIND", "TTL", "READERS", "INTENT", "FENCE", "WAITERS", "LABEL",
    ]
    .map(String::from)
    .to_vec()];
    let mut silent = Vec::new();
    for n in &seen.nodes {
        match &n.state {
            Ok(s) => {
                let mut row = vec![n.node.clone(), not_voting(&n.not_voting)];
                row.extend(state_cells(s));
                rows.push(row);
            }
            // The reason below the table, so one long error does not widen every column.
            Err(e) => {
                let mut row = vec![n.node.clone(), "-".into(), "no answer".into()];
                row.extend(std::iter::repeat_n("-".to_string(), 7));
                rows.push(row);
                silent.push(format!("  {}: {e}\n", n.node));
            }
        }
    }
    out.push_str(&render(&rows));
    out.extend(silent);
    out
}

fn state_cells(s: &KeyState) -> Vec<String> {
    let readers = if s.readers == 0 {
        "-".into()
    } else {
        s.readers.to_string()
    };
    vec![
        if s.held { "held" } else { "free" }.into(),
        kind(s.kind).into(),
        opt(s.remaining),
        readers,
        opt(s.write_intent),
        s.fence.map_or("-".into(), |f| f.to_string()),
        opt(s.waiters),
        s.label.as_deref().map_or("-".into(), escape),
    ]
}

pub fn quarantine(q: QuarantineState) -> String {
    match q {
        QuarantineState::Off => "off".into(),
        QuarantineState::Clear => "clear".into(),
        QuarantineState::For(left) => format!("{} left", dur(left)),
        QuarantineState::Unidentified => "unidentified".into(),
        _ => "?".into(),
    }
}

pub fn nodes(status: &[NodeStatus]) -> String {
    let mut rows = vec![[
        "NODE",
        "CONNECTED",
        "VOTES",
        "RTT",
        "RUN_ID",
        "UPTIME",
        "QUARANTINE",
        "CLOCK",
        "DURABLE",
        "LAST ERROR",
    ]
    .map(String::from)
    .to_vec()];
    for s in status {
        let (run_id, uptime) = match &s.identity {
            Some(id) => (
                id.run_id.chars().take(12).collect(),
                format!("{} ({} ago)", uptime(id.uptime), dur(id.read_ago)),
            ),
            None => ("-".into(), "-".into()),
        };
        let durable = match (s.durable_claim, &s.identity) {
            (false, _) => "-".into(),
            (true, Some(id)) if id.durable => "claimed, trusted".into(),
            (true, Some(_)) => "claimed, refuted".into(),
            (true, None) => "claimed".into(),
        };
        rows.push(vec![
            s.node.clone(),
            yes(s.connected),
            yes(s.votes),
            s.rtt.map_or("-".into(), |r| format!("{}us", r.as_micros())),
            run_id,
            uptime,
            quarantine(s.quarantine),
            s.clock_silenced_for
                .map_or("ok".into(), |d| format!("silenced {}", dur(d))),
            durable,
            s.last_error.as_ref().map_or("-".into(), |e| e.to_string()),
        ]);
    }
    render(&rows)
}

pub fn forced(resource: &str, status: &[NodeStatus], done: &ForceRelease) -> String {
    let mut out = format!(
        "{}: force-released: {} node(s) answered, {} held it and deleted it (fence counter kept)\n",
        escape(resource),
        done.answered,
        done.deleted_on
    );
    let mut rows = vec![vec!["NODE".to_string(), "RESULT".to_string()]];
    for (s, n) in status.iter().zip(&done.nodes) {
        let result = match n {
            Ok(0) => "nothing held".to_string(),
            Ok(k) => format!("deleted {k} key(s)"),
            Err(e) => format!("error: {e}"),
        };
        rows.push(vec![s.node.clone(), result]);
    }
    out.push_str(&render(&rows));
    out
}

/// `850ms`, `9.8s`, `5m03s`, `2h05m`.
pub fn dur(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, (ms / 60_000) % 60)
    }
}

/// Text from the nodes (a label, a resource) made safe for a terminal: control characters escaped.
pub fn escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_at_a_glance_and_text_is_escaped() {
        assert_eq!(dur(Duration::from_millis(850)), "850ms");
        assert_eq!(dur(Duration::from_millis(9_840)), "9.8s");
        assert_eq!(dur(Duration::from_secs(303)), "5m03s");
        assert_eq!(dur(Duration::from_secs(7_500)), "2h05m");
        assert_eq!(escape("a\x1b[2Jb\n"), "a\\u{1b}[2Jb\\n");
    }
}
