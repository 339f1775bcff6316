//! loadgen's end-to-end tests, as one binary (linked once): each module runs the built `loadgen`
//! binary against nodes it spawns itself or that the test kit (`testkit/`) starts.

mod bad_input;
mod common;
mod contention;
mod election;
mod faults;
mod overload;
mod processes;
mod real_run;
mod servers;
