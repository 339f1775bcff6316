//! The command line (clap derive; durations are the library's `parse_duration`: a number and a
//! unit, `0` alone), and clap's errors on one line with any password in them replaced.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use redlock_engine::parse_duration;

/// Inspect, watch, break and hold redlock-engine locks.
///
/// Reads the services' configuration variables (`Config::from_env`: REDLOCK_NODES, REDLOCK_KEY_PREFIX,
/// REDLOCK_KEY_FORMAT, REDLOCK_MAX_TTL, REDLOCK_CONNECT_TIMEOUT, REDLOCK_QUARANTINE,
/// REDLOCK_CLOCK_GUARD, REDLOCK_TLS_CA_FILE, ...), so it sees the locks a service configured that way
/// takes; the flags below override them. A lock it takes carries its own holder label, not
/// REDLOCK_HOLDER_LABEL. Every TIME, in a flag or a variable, is a number and a unit (`500ms`,
/// `30s`, `1.5m`, `1h`; `0` alone): a bare `10` is refused.
// The exit codes are `crate::exit::HELP`, after the options.
#[derive(Parser, Debug)]
#[command(name = "redlock", version, after_help = crate::exit::HELP)]
pub struct Options {
    /// The lock nodes, comma-separated URLs as the library takes them (`redis://[user:password@]host:port`,
    /// `rediss://`, `redis-cluster://`, `redis-sentinel://`). Never printed with their password.
    #[arg(
        long,
        env = "REDLOCK_NODES",
        hide_env_values = true,
        value_delimiter = ',',
        value_name = "URLS",
        global = true
    )]
    pub nodes: Vec<String>,
    /// Key prefix of the locks (the services' `Config::key_prefix`; default: REDLOCK_KEY_PREFIX, else
    /// `redlock:`).
    #[arg(long, value_name = "PREFIX", global = true)]
    pub prefix: Option<String>,
    /// Keys are `prefix + resource`, no braces (the services' `KeyFormat::Plain`; their
    /// `shared_keys()` is this with `--prefix ''`; default: REDLOCK_KEY_FORMAT, else tagged).
    #[arg(long, global = true)]
    pub plain_keys: bool,
    /// JSON instead of tables (one object; `watch`: one per line).
    #[arg(long, global = true)]
    pub json: bool,
    /// Bound on connecting to each node, and on each node's answer (default: REDLOCK_CONNECT_TIMEOUT,
    /// else 1s).
    #[arg(long, value_parser = parse_duration, value_name = "TIME", global = true)]
    pub connect_timeout: Option<Duration>,
    /// The services' `max_ttl`: how long a restarted node stays quarantined, the longest --ttl
    /// (default: REDLOCK_MAX_TTL, else 60s).
    #[arg(long, value_parser = parse_duration, value_name = "TIME", global = true)]
    pub max_ttl: Option<Duration>,
    /// Turn crashed-node quarantine off (only for nodes started moments ago that hold no lock, such
    /// as a test's; see the library's README; default: REDLOCK_QUARANTINE, else on).
    #[arg(long, global = true)]
    pub no_quarantine: bool,
    /// PEM file of the CA certificates for `rediss://` nodes (default: REDLOCK_TLS_CA_FILE, else the
    /// Mozilla roots).
    #[arg(long, value_name = "FILE", global = true)]
    pub tls_ca: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// What every node holds for RESOURCE, and the verdict of the majority; exit 0 held, 1 free,
    /// 3 undecided (as `grep`: scripts can test it).
    #[command(after_help = crate::exit::HELP)]
    Inspect {
        /// The resource, as the services name it (`orders:42`).
        resource: String,
    },
    /// Break RESOURCE's lock on every node whatever its holder (the fence counter is kept).
    Release {
        /// Required: this breaks mutual exclusion for the current holder.
        #[arg(long)]
        force: bool,
        /// Do not ask for confirmation.
        #[arg(long, short)]
        yes: bool,
        /// The resource.
        resource: String,
    },
    /// Every node's connection, vote, round trip, identity, quarantine and last error.
    Nodes,
    /// `inspect` again and again until Ctrl-C.
    Watch {
        /// The resource.
        resource: String,
        /// Time between refreshes.
        #[arg(long, default_value = "500ms", value_parser = parse_duration, value_name = "TIME")]
        every: Duration,
        /// Stop after this many refreshes (default: until Ctrl-C).
        #[arg(long, value_name = "N")]
        count: Option<u64>,
    },
    /// Hold RESOURCE (renewed) while COMMAND runs; release it when the command ends.
    ///
    /// Waits for the lock (as `flock` and `etcdctl lock` do) unless -n or --wait bound it; Ctrl-C,
    /// SIGTERM or SIGHUP stop the wait and leave nothing on the nodes. The command gets
    /// REDLOCK_RESOURCE (and with --fenced REDLOCK_FENCING_TOKEN) in its environment and runs in a
    /// process group of its own: if the lock is lost, the whole group gets SIGTERM, then SIGKILL
    /// after --kill-after; signals to redlock are passed on to the group.
    #[command(after_help = crate::exit::HELP)]
    Acquire(Acquire),
    /// Run COMMAND only while leader of the election NAME (as `etcdctl elect`); resign when it ends.
    ///
    /// Campaigns (waits to be elected) unless -n or --wait bound it, publishing --value for
    /// `redlock leader`. The command gets REDLOCK_ELECTION, REDLOCK_TERM (larger than every earlier
    /// leader's: pass it to what the command writes, so a store can refuse a deposed leader's late
    /// writes) and REDLOCK_LEADER_VALUE, and is handled as under `acquire`: its own process group,
    /// signals passed on; if leadership is lost, the whole group gets SIGTERM, then SIGKILL after
    /// --kill-after, and the exit code is 113.
    #[command(after_help = crate::exit::HELP)]
    Elect(Elect),
    /// The leader of the election NAME as a majority of nodes shows it: its value and term. Exit 0
    /// with a leader, 1 without, 3 when too few nodes answered to tell.
    Leader {
        /// The election.
        name: String,
        /// After the current leader, one line per change (a new leader, or a new value), until
        /// Ctrl-C.
        #[arg(long)]
        watch: bool,
    },
}

/// `elect`'s options.
#[derive(clap::Args, Debug)]
pub struct Elect {
    /// The election.
    pub name: String,
    /// What the leader publishes while it leads (default: `HOST pid N`).
    #[arg(long, value_name = "TEXT")]
    pub value: Option<String>,
    /// Leadership TTL: a leader that dies without resigning is replaced this long after its last
    /// renewal at most. Renewed every third of it. At most --max-ttl.
    #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "TIME")]
    pub ttl: Duration,
    /// Wait at most this long to be elected (default: as long as another leader holds it; nodes
    /// failing REDLOCK_RETRY_COUNT retries in a row (10) end the wait; 0: one attempt).
    #[arg(long, short = 'w', value_parser = parse_duration, value_name = "TIME")]
    pub wait: Option<Duration>,
    /// One attempt: exit 75 at once if another leader holds it.
    #[arg(long, short = 'n', conflicts_with = "wait")]
    pub nonblock: bool,
    /// Grace between SIGTERM and SIGKILL for the command's group when leadership was lost.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "TIME")]
    pub kill_after: Duration,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `acquire`'s options.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("kind").multiple(false)))]
pub struct Acquire {
    /// The resource.
    pub resource: String,
    /// Lock TTL; renewed every third of it. At most --max-ttl.
    #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "TIME")]
    pub ttl: Duration,
    /// Wait at most this long for the lock (default: as long as another owner holds it; nodes
    /// failing REDLOCK_RETRY_COUNT retries in a row (10) end the wait; 0: one attempt).
    #[arg(long, short = 'w', value_parser = parse_duration, value_name = "TIME")]
    pub wait: Option<Duration>,
    /// One attempt: exit 75 at once if another owner holds it.
    #[arg(long, short = 'n', conflicts_with = "wait")]
    pub nonblock: bool,
    /// A shared (reader) hold of a read-write lock: many --shared holders at once, no --write one.
    #[arg(long, short = 's', group = "kind")]
    pub shared: bool,
    /// The writer's hold of a read-write lock: excludes --shared holders and other writers (a plain
    /// acquire does not wait for readers).
    #[arg(long, group = "kind")]
    pub write: bool,
    /// An exclusive lock with a fencing token, passed as REDLOCK_FENCING_TOKEN.
    #[arg(long, group = "kind")]
    pub fenced: bool,
    /// An exclusive lock granted in arrival order.
    #[arg(long, group = "kind")]
    pub fair: bool,
    /// One of K permits of a semaphore (every holder of the resource must give the same K).
    #[arg(long, value_name = "K", group = "kind")]
    pub permits: Option<u32>,
    /// Holder label shown by `inspect` (default: `redlock acquire` with host, pid and command;
    /// plain locks only, not with the kinds above; `''`: none). Where the nodes' lock user may not
    /// run scripts, the default is none: a label is written by a script.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Grace between SIGTERM and SIGKILL for the command's group when the lock was lost.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "TIME")]
    pub kill_after: Duration,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// clap's error as one line (no usage block), with passwords in any URL it quotes replaced.
pub fn one_line(err: &clap::Error) -> String {
    let text = err
        .to_string()
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:")
        })
        .collect::<Vec<_>>()
        .join(" ");
    scrub(&text)
}

/// `text` with the password of every URL in it replaced (`redis://user:***@host`).
pub fn scrub(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The URL's scheme starts after the last separator before `://`.
        let start = rest[..at]
            .rfind(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == ',' || c == '=')
            .map_or(0, |i| i + 1);
        let end = rest[at..]
            .find(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == ',')
            .map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..start]);
        out.push_str(&redlock_engine::__private::redact_node_url(
            &rest[start..end],
        ));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Options::command().debug_assert();
    }

    #[test]
    fn a_duration_without_a_unit_is_refused_clearly() {
        let err = Options::try_parse_from(["redlock", "--max-ttl", "10", "nodes"]).unwrap_err();
        let line = one_line(&err);
        assert!(
            line.contains("--max-ttl") && line.contains("give a unit: 10s or 10ms"),
            "{line}"
        );
        let ok = Options::try_parse_from(["redlock", "--max-ttl", "10s", "nodes"]).unwrap();
        assert_eq!(ok.max_ttl, Some(Duration::from_secs(10)));
    }

    #[test]
    fn passwords_are_scrubbed_from_any_url() {
        let text =
            "unexpected argument 'redis://ops:hunter2@10.0.0.1:6379' found, also rediss://:pw@h:1";
        let clean = scrub(text);
        assert!(
            !clean.contains("hunter2") && !clean.contains(":pw@"),
            "{clean}"
        );
        assert!(clean.contains("redis://ops:***@10.0.0.1:6379'"), "{clean}");
        assert_eq!(scrub("no url here"), "no url here");
        let many = scrub("redis://a:1@h:1,redis://b:2@h:2");
        assert_eq!(many, "redis://a:***@h:1,redis://b:***@h:2");
    }
}
