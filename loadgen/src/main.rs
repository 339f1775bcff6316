//! `cargo run --release -p loadgen -- --help`. Everything lives in the library: see `lib.rs`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    loadgen::app::main()
}
