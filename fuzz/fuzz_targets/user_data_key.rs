//! Fuzz target: the key parsing of wmco-user-data (`PublicKey::parse`, `from_private_key_pem`, `from_openssh`: PEM
//! private keys in four encodings and OpenSSH public key lines) that user data is rendered from and weak keys are
//! refused by.
//!
//! The checks live in `crates/user-data/tests/fuzz_checks/mod.rs`, which the crate's `tests/fuzz_replay.rs` also
//! runs on the committed corpus `fuzz/corpus/user_data_key` in CI.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/user-data/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| {
    fuzz_checks::user_data_key(data);
});
