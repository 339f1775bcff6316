//! [`Options`] parsed and planned: defaults, units, the modes, and every bad input as one line.

use std::time::Duration;

use clap::Parser;

use crate::engines::{EngineKind, Waiting};
use crate::workload::{Distribution, Stop};

use super::*;

fn plan(args: &[&str]) -> Result<Plan, String> {
    let opts = Options::try_parse_from(std::iter::once("loadgen").chain(args.iter().copied()))
        .map_err(|e| one_line(&e))?;
    opts.plan()
}

#[test]
fn no_arguments_is_the_standard_scenario_on_five_spawned_nodes() {
    let p = plan(&[]).unwrap();
    assert_eq!(p.nodes, NodeSource::Spawn(5));
    assert_eq!(p.engines, DEFAULT_ENGINES.to_vec());
    assert!(p.default_engines);
    let shape: Vec<_> = p
        .scenarios
        .iter()
        .map(|s| (s.id, s.concurrency, s.keys))
        .collect();
    assert_eq!(
        shape,
        [("a", 1, 1_000_000), ("b", 64, 1_000_000), ("c", 64, 4)]
    );
    assert_eq!(p.workload.stop, Stop::Duration(Duration::from_secs(5)));
    assert_eq!(p.runtime, RuntimeKind::Current);
    assert_eq!(p.overload, None, "the default run has no overload scenario");
}

#[test]
fn custom_run_with_units() {
    let p = plan(&[
        "--concurrency",
        "8",
        "--keys",
        "100k",
        "--hold",
        "1ms..2ms",
        "--ttl",
        "2s",
        "--duration",
        "250ms",
        "--engine",
        "redlock,raw",
        "--retry-delay",
        "5ms",
        "--distribution",
        "zipf",
        "--runtime",
        "multi",
    ])
    .unwrap();
    assert_eq!(p.scenarios.len(), 1);
    assert_eq!(
        (p.scenarios[0].concurrency, p.scenarios[0].keys),
        (8, 100_000)
    );
    assert_eq!(p.workload.stop, Stop::Duration(Duration::from_millis(250)));
    assert_eq!(p.workload.ttl, Duration::from_secs(2));
    assert_eq!(p.workload.retry_delay, Duration::from_millis(5));
    assert_eq!(p.workload.distribution, Distribution::Zipf);
    assert_eq!(p.engines, [EngineKind::Redlock, EngineKind::Raw]);
    assert!(!p.default_engines);
    assert_eq!(p.runtime, RuntimeKind::Multi);
}

#[test]
fn nodes_and_cycles() {
    let p = plan(&[
        "--nodes",
        "redis://127.0.0.1:7101,redis://127.0.0.1:7102",
        "--cycles",
        "10k",
    ])
    .unwrap();
    assert_eq!(
        p.nodes,
        NodeSource::Existing(vec![
            "redis://127.0.0.1:7101".into(),
            "redis://127.0.0.1:7102".into()
        ])
    );
    assert_eq!(p.workload.stop, Stop::Cycles(10_000));
}

#[test]
fn processes_and_waiting() {
    let p = plan(&[]).unwrap();
    assert_eq!(
        (p.processes, p.waiting.as_slice()),
        (1, &[Waiting::Smart][..])
    );
    assert_eq!(p.child, None);
    let p = plan(&[
        "--concurrency",
        "64",
        "--keys",
        "4",
        "--processes",
        "4",
        "--waiting",
        "plain,smart,plain",
    ])
    .unwrap();
    assert_eq!(p.processes, 4);
    assert_eq!(p.waiting, [Waiting::Plain, Waiting::Smart]);
    // The standard scenarios take any P: (a) then runs in one process.
    assert_eq!(plan(&["--processes", "4"]).unwrap().processes, 4);
    let p = plan(&["--processes", "2", "--cycles", "2"]).unwrap();
    assert_eq!(p.workload.stop, Stop::Cycles(2));
}

#[test]
fn worker_process_mode() {
    let p = plan(&[
        "--worker-process",
        "--tag",
        "03",
        "--nodes",
        "redis://127.0.0.1:7101",
        "--engine",
        "rslock",
        "--concurrency",
        "16",
        "--keys",
        "4",
    ])
    .unwrap();
    assert_eq!(p.child.as_deref(), Some("03"));
    assert!(p.quiet);
    // Each a command line (split at spaces) that only a worker's parent may give.
    for line in [
        "--worker-process --tag 1 --concurrency 2 --keys 2",
        "--worker-process --tag 1 --nodes redis://127.0.0.1:1 --engine redlock,rslock --keys 2",
        "--worker-process --tag 1 --nodes redis://127.0.0.1:1 --engine redlock --waiting plain,smart --keys 2",
    ] {
        let args: Vec<&str> = line.split(' ').collect();
        let err = plan(&args).unwrap_err();
        assert!(
            err.contains("--worker-process is internal"),
            "{args:?}: {err}"
        );
    }
    // The tag is required with --worker-process.
    assert!(plan(&["--worker-process", "--nodes", "redis://127.0.0.1:1"]).is_err());
}

#[test]
fn bad_input_is_one_line() {
    for (args, needle) in [
        (
            &["--concurrency", "0"][..],
            "--concurrency must be at least 1",
        ),
        (&["--duration", "0"][..], "--duration must be above zero"),
        (&["--duration", "0s"][..], "--duration must be above zero"),
        (&["--keys", "0"][..], "--keys must be at least 1"),
        (&["--engine", "redlock,nope"][..], "invalid value 'nope'"),
        (&["--ttl", "10"][..], "no unit"),
        (&["--spawn", "0"][..], "--spawn must be between 1 and 9"),
        (&["--hold", "20s"][..], "must be below --ttl"),
        (
            &["--scenario", "standard", "--concurrency", "4"][..],
            "custom run",
        ),
        (
            &["--duration", "1s", "--cycles", "5"][..],
            "cannot be used with",
        ),
        (
            &["--processes", "0"][..],
            "--processes must be between 1 and 64",
        ),
        (
            &["--processes", "65"][..],
            "--processes must be between 1 and 64",
        ),
        (
            &["--concurrency", "2", "--processes", "4"][..],
            "--concurrency (2) must be at least --processes (4)",
        ),
        (
            &["--processes", "4", "--cycles", "3"][..],
            "--cycles must be at least --processes",
        ),
        (&["--waiting", "clever"][..], "invalid value 'clever'"),
    ] {
        let err = plan(args).unwrap_err();
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains('\n'), "{args:?}: not one line: {err}");
    }
}

#[test]
fn persistence_is_for_spawned_nodes_and_off_by_default() {
    assert_eq!(plan(&[]).unwrap().persistence, Persistence::None);
    let p = plan(&["--persistence", "always"]).unwrap();
    assert_eq!(p.persistence.appendfsync(), Some("always"));
    assert_eq!(
        plan(&["--persistence", "everysec"]).unwrap().persistence,
        Persistence::Everysec
    );
    let err = plan(&["--persistence", "always", "--nodes", "redis://127.0.0.1:1"]).unwrap_err();
    assert!(err.contains("spawned nodes"), "{err}");
    assert!(plan(&["--persistence", "sometimes"]).is_err());
}

#[test]
fn server_is_a_name_of_the_matrix_or_a_path_for_spawned_nodes() {
    assert_eq!(plan(&[]).unwrap().server, Server::Redis7);
    assert_eq!(
        plan(&["--server", "valkey"]).unwrap().server,
        Server::Valkey
    );
    assert_eq!(
        plan(&["--server", "redis6"]).unwrap().server,
        Server::Redis6
    );
    assert_eq!(
        plan(&["--server", "./bin/redis-server"]).unwrap().server,
        Server::Path("./bin/redis-server".into())
    );
    let err = plan(&["--server", "valky"]).unwrap_err();
    assert!(err.contains("not redis7, redis6 or valkey"), "{err}");
    let err = plan(&["--server", "valkey", "--nodes", "redis://127.0.0.1:1"]).unwrap_err();
    assert!(err.contains("spawned nodes"), "{err}");
}

#[test]
fn contention_runs_its_own_rows_and_refuses_what_it_sets() {
    let p = plan(&["--scenario", "contention", "--duration", "300ms"]).unwrap();
    assert!(p.contention);
    assert!(
        p.scenarios.is_empty(),
        "its rows are not ordinary scenarios"
    );
    assert_eq!(p.engines, [EngineKind::Redlock, EngineKind::Rslock]);
    assert!(
        p.default_engines,
        "rslock is skipped, not refused, on a cluster"
    );
    assert_eq!(p.workload.stop, Stop::Duration(Duration::from_millis(300)));
    assert_eq!(p.processes, 1);
    let p = plan(&[
        "--scenario",
        "contention",
        "--engine",
        "redlock,redlock-fred,raw",
    ])
    .unwrap();
    assert_eq!(p.engines.len(), 3);
    assert!(!plan(&[]).unwrap().contention);
    for (args, needle) in [
        (&["--processes", "4"][..], "drop --processes"),
        (&["--processes", "1"][..], "drop --processes"),
        (&["--lock", "fair"][..], "drop --lock"),
        (&["--lock", "exclusive"][..], "drop --lock"),
        (&["--concurrency", "64"][..], "drop --concurrency/--keys"),
        (&["--keys", "4"][..], "drop --concurrency/--keys"),
        (
            &["--engine", "redlock,ceiling"][..],
            "drop it from --engine",
        ),
        (&["--cycles", "15"][..], "--cycles must be at least 16"),
    ] {
        let args: Vec<&str> = ["--scenario", "contention"]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        let err = plan(&args).unwrap_err();
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(err.contains("contention"), "{args:?}: {err}");
    }
    assert!(plan(&["--scenario", "contention", "--cycles", "16"]).is_ok());
    // Outside the scenario both options keep their meaning and defaults.
    let p = plan(&["--lock", "fair", "--processes", "4"]).unwrap();
    assert_eq!(
        (p.workload.lock, p.processes),
        (crate::workload::LockKind::Fair, 4)
    );
    assert_eq!(
        plan(&[]).unwrap().workload.lock,
        crate::workload::LockKind::Exclusive
    );
}
