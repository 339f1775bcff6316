//! What the subcommands print: `table` (for people, with the durations and escaping of its cells) or
//! `json` (for scripts, `--json`, naming kinds and verdicts as the table does). Nothing printed
//! carries a lock value (the library never has one to give) or a password (addresses come from the
//! library without credentials).

mod json;
mod table;

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
