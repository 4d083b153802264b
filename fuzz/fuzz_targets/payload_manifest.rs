//! Fuzz target: the payload manifest and checksum file parsers of wmco-payload-manifest (`Manifest::from_yaml`,
//! `ChecksumList::parse`).
//!
//! The checks live in `crates/payload-manifest/tests/fuzz_checks/mod.rs`, which the crate's `tests/fuzz_replay.rs`
//! also runs on the committed corpus `fuzz/corpus/payload_manifest` in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/payload-manifest/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| {
    fuzz_checks::payload_manifest(data);
});
