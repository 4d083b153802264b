//! Fuzz target: the state probe's output parser of wmco-windows-services (`ProbeRequest::parse_output` for three
//! requests, then `plan` on a node's observation) and `decode_failure_actions`, which read whatever a Windows host
//! prints.
//!
//! The checks live in `crates/windows-services/tests/fuzz_checks/mod.rs`, which the crate's `tests/fuzz_replay.rs`
//! also runs on the committed corpus `fuzz/corpus/state_probe` in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/windows-services/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| {
    fuzz_checks::state_probe(data);
});
