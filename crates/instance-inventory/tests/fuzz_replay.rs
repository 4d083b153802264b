//! Replays the committed corpus of the `instance_entry` fuzz target (`fuzz/corpus/instance_entry`) through the
//! same checks the target runs (`tests/fuzz_checks`), so CI keeps every input that ever mattered passing without
//! cargo-fuzz: no panic, a typed error or a valid instance.

#![allow(clippy::unwrap_used, reason = "test setup: a failure must panic")]

mod fuzz_checks;

#[path = "../../../fuzz/replay.rs"]
mod replay_support;

use replay_support::replay;

#[test]
fn instance_entry_corpus_replays_through_the_fuzz_checks() {
    let (accepted, refused) = replay("instance_entry", fuzz_checks::instance_entry);
    assert!(
        accepted >= 3 && refused >= 3,
        "the corpus should hold valid and near-valid inputs: {accepted} accepted, {refused} refused"
    );
}
