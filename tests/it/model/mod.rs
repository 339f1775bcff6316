//! Deterministic simulations of two protocols, checked over many seeds: the fair lock's queue
//! (`fair`) and the fencing token's commit (`fencing`). Both run on one simulation core (`sim`: the
//! RNG and the event queue). `fencing::scripts` runs the fencing model's node transitions through
//! the engine's real Lua scripts on a real node and compares.

mod fair;
mod fencing;
mod sim;
