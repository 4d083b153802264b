//! Replays the committed corpus of the `user_data_key` fuzz target (`fuzz/corpus/user_data_key`) through the same
//! checks the target runs (`tests/fuzz_checks`), so CI keeps every input that ever mattered passing without
//! cargo-fuzz: no panic, a typed error or a usable key.

#![allow(clippy::unwrap_used, reason = "test setup: a failure must panic")]

mod fuzz_checks;

#[path = "../../../fuzz/replay.rs"]
mod replay_support;

use replay_support::replay;

#[test]
fn user_data_key_corpus_replays_through_the_fuzz_checks() {
    let (accepted, refused) = replay("user_data_key", fuzz_checks::user_data_key);
    assert!(
        accepted >= 3 && refused >= 3,
        "the corpus should hold valid and near-valid inputs: {accepted} accepted, {refused} refused"
    );
}
