//! A deterministic simulation of the fencing-token protocol (see `src/kinds/fenced.rs`): nodes with lock keys
//! and fence counters, clients that acquire, commit, hold and release, with random message delay, loss
//! and client pauses. The property: ordered by when their commit completed, usable tokens strictly
//! increase. A scripted trace shows the check is not blind: with neither of the commit's guards a
//! token repeats, with either one it does not.

mod node;
mod scripts;
mod sim;

use node::{node_step, Answer, Guards, Msg, Node};
use sim::simulate;

const BOTH: Guards = Guards {
    check_owner: true,
    conflict: true,
};
const NEITHER: Guards = Guards {
    check_owner: false,
    conflict: false,
};

#[test]
fn tokens_increase_with_both_guards() {
    let mut grants = 0;
    for seed in 0..100 {
        for (nodes, clients) in [(3, 2), (3, 3), (5, 2), (5, 3)] {
            let (g, violation) = simulate(seed, nodes, clients, BOTH);
            grants += g;
            assert_eq!(
                violation, None,
                "seed {seed}, {nodes} nodes, {clients} clients"
            );
        }
    }
    assert!(
        grants > 2_000,
        "the simulation must exercise the protocol: {grants} grants"
    );
}

/// The trace behind "keep both guards": A holds n1, n2 (its SET to n3 was lost) and commits token 1
/// to n2 and n3 while B's early SET holds n3; B's SET to n1 lands after A's keys expired; B read
/// counter 0 on n3 and n1 and proposes 1 again. Returns the tokens A and B end up using.
fn scripted_trace(guards: Guards) -> (Option<u64>, Option<u64>) {
    let mut n: Vec<Node> = (0..3).map(|_| Node::default()).collect();
    let (a, b) = (1, 2);
    let quorum = 2;
    let yes = |ans: Option<Answer>| matches!(ans, Some(Answer::Acquired { yes: true, .. }));
    // t=0: A acquires n1, n2 (n3 lost). Floor 0, proposal 1, valid until 98.
    assert!(yes(node_step(
        &mut n[0],
        0,
        Msg::Acquire { value: a },
        guards
    )));
    assert!(yes(node_step(
        &mut n[1],
        0,
        Msg::Acquire { value: a },
        guards
    )));
    // t=5: B's SET reaches n3 (free).
    let b_n3 = node_step(&mut n[2], 5, Msg::Acquire { value: b }, guards);
    // t=6: A's commit of 1 reaches n2 and n3 (its copy to n1 is lost).
    let mut a_ok = 0;
    for node in [1, 2] {
        if let Some(Answer::Committed { ok: true, .. }) =
            node_step(&mut n[node], 6, Msg::Commit { value: a, token: 1 }, guards)
        {
            a_ok += 1;
        }
    }
    let a_token = (a_ok >= quorum).then_some(1);
    // t=101: B's SET reaches n1 after A's keys expired; B has n3 and n1, both read counter 0.
    let b_n1 = node_step(&mut n[0], 101, Msg::Acquire { value: b }, guards);
    assert!(yes(b_n3.clone()) && yes(b_n1.clone()), "B wins n3 and n1");
    let floor = [b_n3, b_n1]
        .into_iter()
        .filter_map(|ans| match ans {
            Some(Answer::Acquired { counter, .. }) => Some(counter),
            _ => None,
        })
        .max()
        .unwrap();
    // t=102: B commits floor+1 to n1 and n3, retrying above any conflict (B valid until 103).
    let mut token = floor + 1;
    for _ in 0..3 {
        let mut ok = 0;
        let mut conflict = None;
        for node in [0, 2] {
            match node_step(&mut n[node], 102, Msg::Commit { value: b, token }, guards) {
                Some(Answer::Committed { ok: true, .. }) => ok += 1,
                Some(Answer::Committed {
                    conflict: Some(c), ..
                }) => conflict = Some(c),
                _ => {}
            }
        }
        if ok >= quorum {
            return (a_token, Some(token));
        }
        match conflict {
            Some(c) => token = c + 1,
            None => break,
        }
    }
    (a_token, None)
}

#[test]
fn each_guard_alone_stops_the_repeated_token_and_neither_does_not() {
    let repeated = |g: Guards| {
        let (a, b) = scripted_trace(g);
        matches!((a, b), (Some(a), Some(b)) if b <= a)
    };
    assert!(repeated(NEITHER), "without both guards B reuses A's token");
    assert!(!repeated(Guards {
        check_owner: true,
        conflict: false
    }));
    assert!(!repeated(Guards {
        check_owner: false,
        conflict: true
    }));
    assert!(!repeated(BOTH));
}
