//! Replays the committed corpora of the `sc_output` and `state_probe` fuzz targets (`fuzz/corpus/sc_output`,
//! `fuzz/corpus/state_probe`) through the same checks the targets run (`tests/fuzz_checks`), so CI keeps every
//! input that ever mattered passing without cargo-fuzz: no panic, a typed error or a consistent parse.

#![allow(clippy::unwrap_used, reason = "test setup: a failure must panic")]

mod fuzz_checks;

#[path = "../../../fuzz/replay.rs"]
mod replay_support;

use replay_support::replay;

#[test]
fn sc_output_corpus_replays_through_the_fuzz_checks() {
    let (accepted, refused) = replay("sc_output", fuzz_checks::sc_output);
    assert!(
        accepted >= 3 && refused >= 3,
        "the corpus should hold valid and near-valid inputs: {accepted} accepted, {refused} refused"
    );
}

#[test]
fn state_probe_corpus_replays_through_the_fuzz_checks() {
    let (accepted, refused) = replay("state_probe", fuzz_checks::state_probe);
    assert!(
        accepted >= 3 && refused >= 3,
        "the corpus should hold valid and near-valid inputs: {accepted} accepted, {refused} refused"
    );
}
