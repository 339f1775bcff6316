//! The tap on the engine's rounds (scenario 19): which enqueue and attempt rounds one `acquire_fair`
//! call ran, and what each came to, **without any hook in the library** — from the `tracing` debug
//! event it emits for every decided round (`redlock round`, fields `op`, `yes`, `taken`, `gone`,
//! `took_us`; see `observe.rs`), seen by a subscriber of this process.
//!
//! Why this attributes rounds to the right call: the process runs one thread, and the engine emits a
//! fair round's event in `fair_wait`'s own code, inside a poll of the acquire future (not in a task of
//! its own). [`tapped`] lends the call's list to the thread for exactly the duration of each poll of
//! that future, so an event seen while the list is lent is that call's; events of other tasks
//! (releases, renewals, other calls) arrive between those polls and find nothing lent. Every round of
//! a fair call is an enqueue or an attempt (the agree round is an attempt), one per `Lock::attempts`
//! — the checker compares the two.
//!
//! The time taken is when the event is seen: after every reply the round counted; the round's own
//! duration (`took_us`) says when it started, give or take the microseconds between the engine's clock
//! read and its event.

use std::cell::RefCell;
use std::fmt::Debug;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::Mutex;

use tracing::field::{Field, Visit};
use tracing::{span, Event, Metadata, Subscriber};

use crate::clock::mono_ns;
use crate::fair_log::Round;

thread_local! {
    /// The rounds of the call being polled, while it is polled.
    static LENT: RefCell<Option<Vec<Round>>> = const { RefCell::new(None) };
}

/// Installs the tap as this process's `tracing` subscriber (once, before the engine is built).
pub fn install() -> Result<(), String> {
    tracing::subscriber::set_global_default(Tap).map_err(|e| format!("tracing subscriber: {e}"))
}

/// Runs `fut`, adding to `rounds` every acquire round the engine decides while polling it. `rounds`
/// keeps what was seen even if `fut` is dropped unfinished (a cancelled call).
/// (A `Mutex`, never contended: only for the task's future to stay `Send`.)
pub async fn tapped<F: Future>(fut: F, rounds: &Mutex<Vec<Round>>) -> F::Output {
    let mut fut = pin!(fut);
    let list = || rounds.lock().unwrap_or_else(|e| e.into_inner());
    poll_fn(|cx| {
        let taken = std::mem::take(&mut *list());
        LENT.with_borrow_mut(|lent| *lent = Some(taken));
        let r = fut.as_mut().poll(cx);
        *list() = LENT.with_borrow_mut(Option::take).unwrap_or_default();
        r
    })
    .await
}

/// The subscriber: keeps `redlock round` events of op `acquire` for the lent list, ignores the rest.
struct Tap;

impl Subscriber for Tap {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event() && metadata.target().starts_with("redlock_engine")
    }

    fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
        // Never enabled for spans; an id is still owed.
        span::Id::from_u64(1)
    }

    fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

    fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

    fn event(&self, event: &Event<'_>) {
        let t = mono_ns();
        let mut fields = Fields::default();
        event.record(&mut fields);
        if fields.message != "redlock round" || fields.op != "acquire" {
            return;
        }
        let round = Round {
            t,
            yes: fields.yes,
            taken: fields.taken,
            gone: fields.gone,
            took: fields.took_us.saturating_mul(1000),
        };
        LENT.with_borrow_mut(|lent| {
            if let Some(list) = lent {
                list.push(round);
            }
        });
    }

    fn enter(&self, _: &span::Id) {}

    fn exit(&self, _: &span::Id) {}
}

/// The fields of one event that the tap reads.
#[derive(Default)]
struct Fields {
    message: String,
    op: String,
    yes: u32,
    taken: u32,
    gone: u32,
    took_us: u64,
}

impl Visit for Fields {
    fn record_u64(&mut self, field: &Field, value: u64) {
        let v = u32::try_from(value).unwrap_or(u32::MAX);
        match field.name() {
            "yes" => self.yes = v,
            "taken" => self.taken = v,
            "gone" => self.gone = v,
            "took_us" => self.took_us = value,
            _ => {}
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "op" {
            self.op = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}
