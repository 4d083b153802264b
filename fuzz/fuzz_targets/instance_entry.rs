//! Fuzz target: the `windows-instances` entry parsers of wmco-instance-inventory (`parse_address`, `parse_value`,
//! `instance_name`, `build_inventory`): the first line of the input is the key, the rest the value.
//!
//! The checks live in `crates/instance-inventory/tests/fuzz_checks/mod.rs`, which the crate's
//! `tests/fuzz_replay.rs` also runs on the committed corpus `fuzz/corpus/instance_entry` in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/instance-inventory/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| {
    fuzz_checks::instance_entry(data);
});
