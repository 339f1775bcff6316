//! What the kit's long-lived owners (loadgen, chaos) rely on when they start nodes: an error to report
//! instead of a panic, a process group of the node's own, and no node outliving its starter.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use testkit::{NodeSpec, RedisNode, StartError};

#[test]
fn a_missing_binary_is_an_error_to_report() {
    let spec = NodeSpec::default().on("/no/such/redis-server".into());
    match RedisNode::try_start_spec(spec) {
        Err(StartError::Spawn { error, .. }) => assert_eq!(error.kind(), ErrorKind::NotFound),
        other => panic!("expected a spawn error, got {other:?}"),
    }
}

#[test]
fn a_node_of_its_own_group_leads_it() {
    let node = RedisNode::start_spec(NodeSpec::default().in_own_group());
    let pid = node.pid().expect("running");
    // SAFETY: getpgid(2) has no memory-safety preconditions.
    assert_eq!(unsafe { libc::getpgid(pid) }, pid);
}

#[test]
fn a_tied_node_dies_with_the_thread_that_started_it() {
    let (pid, dir) = std::thread::spawn(|| {
        let node = RedisNode::start_spec(NodeSpec::default().tied());
        let found = (node.pid().expect("running"), node.dir().to_path_buf());
        // No destructor: only the kernel's PR_SET_PDEATHSIG may stop it.
        std::mem::forget(node);
        found
    })
    .join()
    .expect("starter thread");
    let until = Instant::now() + Duration::from_secs(5);
    let mut status = 0;
    // SAFETY: waitpid(2) on our own child, into a local.
    while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
        assert!(Instant::now() < until, "node {pid} outlived its starter");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::fs::remove_dir_all(dir);
    assert!(libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL);
}
