//! Deterministic simulations of two protocols, checked over many seeds: the fair lock's queue
//! (`fair`) and the fencing token's commit (`fencing`). Both run on one simulation core (`sim`: the
//! RNG and the event queue).

mod fair;
mod fencing;
mod sim;
