//! The `redlock` binary against real nodes, one test binary (linked once): each module a topic.

mod acquire;
mod elect;
mod inspect;
mod lost;
mod no_scripting;
mod release;
mod signals;
mod support;
mod usage;
