//! The replay of a fuzz target's committed corpus, shared by the crates' `tests/fuzz_replay.rs` (each includes
//! this file with `#[path]`): every file of `fuzz/corpus/<target>` goes through the checks the target runs, and a
//! failing file is named, so CI keeps every input that ever mattered passing without cargo-fuzz.

use std::path::{Path, PathBuf};

/// Every file of `fuzz/corpus/<target>`, sorted by name.
pub fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target);
    let mut entries: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&directory)
        .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    entries.sort();
    entries
}

/// Runs every corpus file of `target` through `check`, naming the file that fails; returns how many were accepted
/// and how many refused.
pub fn replay(target: &str, check: fn(&[u8]) -> bool) -> (usize, usize) {
    let entries = corpus(target);
    assert!(entries.len() >= 10, "fuzz/corpus/{target} has only {} files", entries.len());
    let mut accepted = 0;
    for (path, bytes) in &entries {
        let outcome = std::panic::catch_unwind(|| check(bytes));
        match outcome {
            Ok(true) => accepted += 1,
            Ok(false) => {}
            Err(_) => panic!("{} fails the {target} fuzz checks (see the panic above)", path.display()),
        }
    }
    (accepted, entries.len() - accepted)
}
