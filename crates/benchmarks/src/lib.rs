//! The installer's benchmarks live in `examples/` (`cargo run --release -p capi-benchmarks --example
//! scale_bench`; BENCHMARKS.md gives each one's command and current figure). Out of the binary crate
//! so that `capi-installer` carries no measuring code or its dependencies; this library is empty.
