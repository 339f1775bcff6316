//! `redlock acquire` where the nodes' lock user may not run scripts (an ACL user without
//! `@scripting`, Valkey 9): a plain lock works on native commands, without the holder label it
//! would otherwise write by a script; an explicit label, or a kind that needs scripts, is refused
//! saying what to do. Run on Valkey with `scripts/with-server valkey cargo test -p redlock-cli
//! --test it -- no_scripting`; elsewhere it skips with a message.

use std::time::Duration;

use testkit::server::{self, Needs};

use crate::support::{eventually, redlock, run, RedisNode};

#[test]
fn acquire_works_without_scripts_and_says_what_to_do_where_it_cannot() {
    if !server::skip_unless(
        "no_scripting::acquire_works_without_scripts_and_says_what_to_do_where_it_cannot",
        Needs::Native,
    ) {
        return;
    }
    let n = RedisNode::start_without_scripting();
    let url = n.locker_url();
    let (code, out, err) = run(redlock(&url).args([
        "--no-quarantine",
        "acquire",
        "job",
        "--",
        "sh",
        "-c",
        "echo held $REDLOCK_RESOURCE",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("held job"), "{out}");
    assert!(err.contains("no holder label"), "{err}");
    assert!(
        eventually(Duration::from_secs(2), || !n.exists(b"redlock:{job}")),
        "released"
    );
    // An explicit label needs a script: refused at once, with what to do.
    let (code, _, err) = run(redlock(&url).args([
        "--no-quarantine",
        "acquire",
        "job",
        "--label",
        "nightly",
        "--",
        "true",
    ]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("+@scripting") && err.contains("without a"),
        "{err}"
    );
    // So does a kind that needs scripts.
    let (code, _, err) =
        run(redlock(&url).args(["--no-quarantine", "acquire", "job", "--fair", "--", "true"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("+@scripting"), "{err}");
}
