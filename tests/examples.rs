//! The examples run, not only compile: each is built once with `cargo build --examples` (the cargo
//! running this test, `CARGO`), run with a time limit on three nodes this test starts
//! (`REDLOCK_NODES`, `REDLOCK_QUARANTINE=off`), and checked for its exit status, its key lines, and
//! that it left no lock on the nodes. The HTTP service is also run as a plain server: this test is
//! its client (hyper's), sends it concurrent requests, and stops it with SIGINT (ctrl-c) while
//! requests are in flight.
//!
//! A test binary of its own, not a module of `tests/it`: it runs cargo and the example processes,
//! not the library, and `cargo test --test examples` runs (or a filter skips) it alone. The examples
//! run one at a time: several at once on two cores would distort the timings some of them show.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use testkit::RedisNode;

/// An example to run: its arguments (`{node}`: the URL of the first of the test's nodes), its
/// environment, and lines its output must contain.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
    lines: &'static [&'static str],
}

const fn case(name: &'static str, lines: &'static [&'static str]) -> Case {
    Case {
        name,
        args: &[],
        env: &[],
        lines,
    }
}

const CASES: &[Case] = &[
    case(
        "basic",
        &["second owner refused", "a dropped guard released orders:43"],
    ),
    case("renew", &["done after", "the scoped form wrote 20 rows"]),
    case("contention", &["counter = 640 (expected 640)"]),
    case(
        "fenced",
        &["stale write rejected", "store holds \"from client 2\""],
    ),
    case(
        "read_write",
        &["new reader held back", "writer: got catalog"],
    ),
    case("fair", &["served in order [0, 1, 2, 3]"]),
    // Runs on memory nodes of its own (feature `testing`), not on the test's nodes.
    case(
        "lost_lock_test",
        &[
            "lock expired on nodes 0 and 1",
            "job stopped after step 2: lock lost",
            "nothing left on the nodes",
        ],
    ),
    case(
        "inspect",
        &[
            "label Some(\"billing-worker-7\")",
            "deleted on 3 of 3 nodes",
        ],
    ),
    case(
        "periodic_job",
        &["killed (kill -9) mid-job", "took over", "never two at once"],
    ),
    case(
        "leader",
        &[
            "killed (kill -9) while leading",
            "took over",
            "stale write rejected",
            "every replica saw the terms in order",
        ],
    ),
    // One second per run, 8 workers: a check that it works, not the measurement.
    Case {
        args: &["1", "8"],
        ..case(
            "permits_vs_slots",
            &["| counting | 2 | 0 |", "| slots | 4 | 1 |"],
        )
    },
    Case {
        env: &[("REDLOCK_EXAMPLE_SELFTEST", "1")],
        ..case(
            "http_service",
            &[
                "most requests inside one order's lock at once: 1",
                "locks left on the nodes: 0",
                "selftest passed",
            ],
        )
    },
    // One node, named as its argument; run for its exit status.
    Case {
        args: &["{node}"],
        ..case("quickstart", &[])
    },
];

/// Every example's binary, built once for the whole run.
fn examples() -> &'static HashMap<String, PathBuf> {
    static BUILT: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut cargo = Command::new(env!("CARGO"));
        cargo.current_dir(env!("CARGO_MANIFEST_DIR")).args([
            "build",
            "-p",
            "redlock-engine",
            "--examples",
            "--message-format=json",
        ]);
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        // The features this test was built with that examples need: no second library build for
        // fred, and the memory nodes' example only exists with `testing`.
        let features: Vec<&str> = [
            ("fred", cfg!(feature = "fred")),
            ("testing", cfg!(feature = "testing")),
        ]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect();
        if !features.is_empty() {
            cargo.args(["--features", &features.join(",")]);
        }
        let out = cargo.stderr(Stdio::inherit()).output().expect("run cargo");
        assert!(out.status.success(), "cargo build --examples failed");
        // One JSON object per line; an example's artifact names its target and its executable.
        let field = |line: &str, key: &str| {
            let start = line.find(key)? + key.len();
            Some(line[start..].split('"').next()?.to_string())
        };
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| {
                l.contains("\"reason\":\"compiler-artifact\"")
                    && l.contains("\"kind\":[\"example\"]")
            })
            .filter_map(|l| {
                Some((
                    field(l, "\"name\":\"")?,
                    PathBuf::from(field(l, "\"executable\":\"")?),
                ))
            })
            .collect()
    })
}

/// One example at a time (see the module doc); a failed one does not poison the rest.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts `name` on `nodes` with its output piped.
fn spawn(name: &str, args: &[&str], env: &[(&str, &str)], nodes: &[RedisNode]) -> Child {
    let exe = examples()
        .get(name)
        .unwrap_or_else(|| panic!("no example {name}"));
    Command::new(exe)
        .args(args.iter().map(|a| a.replace("{node}", &nodes[0].url())))
        .envs(env.iter().copied())
        .env("REDLOCK_NODES", testkit::urls(nodes).join(","))
        .env("REDLOCK_QUARANTINE", "off")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Waits for `child` (killed after `limit`) and returns its output; panics unless it exited 0.
fn finish(name: &str, mut child: Child, limit: Duration) -> String {
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let (mut o, mut e) = (String::new(), String::new());
        out.read_to_string(&mut o).ok();
        err.read_to_string(&mut e).ok();
        (o, e)
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            child.kill().ok(); // its own nodes die with it; ours are the test's
            child.wait().ok();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = reader.join().unwrap();
    match status {
        Some(s) if s.success() => out,
        Some(s) => panic!("{name} exited {s}\n--- stdout\n{out}--- stderr\n{err}"),
        None => panic!("{name} still running after {limit:?}\n--- stdout\n{out}--- stderr\n{err}"),
    }
}

/// No lock key on any node: only fence counters and election records (both kept by design: a
/// record counts only while the lock key it names is held, and a node the last leader's write
/// missed keeps an earlier leader's) and waiter marks (which expire in a moment) may remain.
fn assert_nothing_held(name: &str, nodes: &[RedisNode]) {
    for node in nodes {
        let keys = node.cmd_str(&["KEYS", "*"]);
        let held: Vec<&str> = keys
            .split_whitespace()
            .filter(|k| !k.ends_with(":fence") && !k.ends_with(":wait") && !k.ends_with(":leader"))
            .collect();
        assert!(held.is_empty(), "{name} left {held:?} on {}", node.url());
    }
}

#[test]
fn every_example_runs_and_says_what_it_shows() {
    let built = examples();
    for name in built.keys() {
        assert!(
            CASES.iter().any(|c| c.name == name),
            "example {name} is not run by tests/examples.rs"
        );
    }
    let mut failed = Vec::new();
    for &Case {
        name,
        args,
        env,
        lines,
    } in CASES
    {
        if name == "quickstart" && !built.contains_key(name) {
            continue; // another engineer's, not landed yet
        }
        let _turn = one_at_a_time();
        let nodes = testkit::nodes(3);
        let started = Instant::now();
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let out = finish(
                name,
                spawn(name, args, env, &nodes),
                Duration::from_secs(60),
            );
            for line in lines {
                assert!(out.contains(line), "{name}: no {line:?} in\n{out}");
            }
            assert_nothing_held(name, &nodes);
        }));
        eprintln!(
            "{name}: {} in {:?}",
            if run.is_ok() { "ok" } else { "FAILED" },
            started.elapsed()
        );
        if run.is_err() {
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?}");
}

/// The HTTP service under concurrent requests from a real client, stopped by ctrl-c with requests
/// in flight: every request it answered was alone in its order's lock, and nothing is left held.
#[test]
fn the_http_service_under_concurrent_requests_then_ctrl_c() {
    let _turn = one_at_a_time();
    let nodes = testkit::nodes(3);
    let mut child = spawn(
        "http_service",
        &[],
        &[("REDLOCK_EXAMPLE_ADDR", "127.0.0.1:0")],
        &nodes,
    );
    // Its first line says where it listens; the rest is read on until it exits.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{first:?}"))
        .to_string();
    let (tx, rest) = mpsc::channel();
    std::thread::spawn(move || tx.send(stdout.lines().map_while(Result::ok).collect::<Vec<_>>()));

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answers = rt.block_on(async {
        let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let pay = |id: u64| {
            let (client, uri) = (client.clone(), format!("{addr}/orders/{id}/pay"));
            tokio::spawn(async move {
                let request = axum::http::Request::post(uri).body(Empty::new()).unwrap();
                let response = client.request(request).await?;
                let status = response.status().as_u16();
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| e.to_string());
                Ok::<_, hyper_util::client::legacy::Error>((
                    id,
                    status,
                    String::from_utf8_lossy(&body.unwrap().to_bytes()).into_owned(),
                ))
            })
        };
        // 40 requests for 4 orders at once, all answered; then 16 for one order, and ctrl-c as soon
        // as the first of them is answered: the others are queued on its lock or on their way.
        let mut answers = Vec::new();
        for task in (0..40).map(|i| pay(i % 4)).collect::<Vec<_>>() {
            answers.push(task.await.unwrap().expect("answered before the shutdown"));
        }
        let late: Vec<_> = (0..16).map(|_| pay(9)).collect();
        let mut late = late.into_iter();
        answers.push(
            late.next()
                .unwrap()
                .await
                .unwrap()
                .expect("the first late request"),
        );
        assert!(
            testkit::signal::send(child.id() as i32, libc::SIGINT),
            "SIGINT"
        );
        for task in late {
            // In flight when the shutdown began: finished. Not yet sent: refused, never half-done.
            if let Ok(answer) = task.await.unwrap() {
                answers.push(answer);
            }
        }
        answers
    });
    let status = child.wait().unwrap();
    let rest = rest.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(status.success(), "exited {status}: {rest:?}");
    assert!(
        rest.iter()
            .any(|l| l.ends_with("locks left on the nodes: 0")),
        "{rest:?}"
    );

    // Per order, the payment numbers its answers carry are 1, 2, ..., n: no two requests ever read
    // the same count (they would have, inside the lock together), none lost; each saw itself alone.
    let mut numbers: HashMap<u64, Vec<u64>> = HashMap::new();
    for (id, status, body) in &answers {
        assert_eq!(*status, 200, "order {id}: {body}");
        assert!(body.ends_with("(1 inside the lock)\n"), "{body}");
        let n = body
            .split("payment ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .unwrap();
        numbers.entry(*id).or_default().push(n.parse().unwrap());
    }
    for (id, n) in &mut numbers {
        n.sort_unstable();
        assert_eq!(*n, (1..=n.len() as u64).collect::<Vec<_>>(), "order {id}");
    }
    let early: usize = (0..4).map(|id| numbers.get(&id).map_or(0, Vec::len)).sum();
    assert_eq!(early, 40, "every request before the shutdown answered");
    assert_nothing_held("http_service", &nodes);
}
