//! Fuzz target: the sc.exe output parsers of wmco-windows-services (`parse_sc_query`, `parse_sc_qc`,
//! `parse_sc_failure`), which read whatever a Windows host prints.
//!
//! The checks live in `crates/windows-services/tests/fuzz_checks/mod.rs`, which the crate's `tests/fuzz_replay.rs`
//! also runs on the committed corpus `fuzz/corpus/sc_output` in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/windows-services/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| {
    fuzz_checks::sc_output(data);
});
