//! What the subcommands print: `table` (for people) or `json` (for scripts, `--json`), and the small
//! helpers both use. Nothing printed carries a lock value (the library never has one to give) or a
//! password (addresses come from the library without credentials).

mod json;
mod table;

use std::time::Duration;

use redlock_engine::{ForceRelease, Inspection, NodeStatus};

pub fn inspection(seen: &Inspection, as_json: bool) {
    if as_json {
        println!("{}", json::inspection(seen));
    } else {
        print!("{}", table::inspection(seen));
    }
}

pub fn nodes(status: &[NodeStatus], as_json: bool) {
    if as_json {
        println!("{}", json::nodes(status));
    } else {
        print!("{}", table::nodes(status));
    }
}

pub fn forced(resource: &str, status: &[NodeStatus], done: &ForceRelease, as_json: bool) {
    if as_json {
        println!("{}", json::forced(resource, status, done));
    } else {
        print!("{}", table::forced(resource, status, done));
    }
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
