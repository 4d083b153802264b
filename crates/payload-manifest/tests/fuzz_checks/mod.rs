//! What the `payload_manifest` fuzz target checks on each input: `fuzz/fuzz_targets/payload_manifest.rs` includes
//! this file, and `tests/fuzz_replay.rs` runs the committed corpus through it, so both check the same thing.
//!
//! Each input is read both as `payload/manifest.yaml` ([`Manifest::from_yaml`]) and as the payload's `sha256sum`
//! file ([`ChecksumList::parse`]). Beyond "no panic": an accepted manifest survives a serialize/deserialize round
//! trip and its lookups (by path, by component name) find the entries of its file list; a checksum list renders
//! to text that parses back to the same digests without a bad line.

use wmco_payload_manifest::{ChecksumList, Manifest, Platform};

/// Checks one fuzz input (see the module documentation); panics when a property fails. Returns whether the input
/// was accepted as a manifest or listed at least one digest.
pub fn payload_manifest(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let manifest = Manifest::from_yaml(&text, "the fuzz input");
    match &manifest {
        Ok(manifest) => check_manifest(manifest),
        Err(error) => assert!(!error.to_string().is_empty()),
    }

    let list = ChecksumList::parse(&text);
    let line_count = text.lines().count();
    assert!(list.bad_lines.iter().all(|bad| bad.line_number >= 1 && bad.line_number <= line_count));
    let reparsed = ChecksumList::parse(&list.render());
    assert_eq!(reparsed.digests, list.digests);
    assert_eq!(reparsed.bad_lines, vec![]);
    manifest.is_ok() || !list.digests.is_empty()
}

fn check_manifest(manifest: &Manifest) {
    let json = serde_json::to_string(manifest).expect("a manifest serializes");
    let back: Manifest = serde_json::from_str(&json).expect("a serialized manifest deserializes");
    assert_eq!(&back, manifest);
    for entry in manifest.files() {
        assert_eq!(manifest.file(&entry.file.path).map(|found| found.file), Some(entry.file));
        assert_eq!(manifest.component(&entry.component.name), Some(entry.component));
    }
    for platform in Platform::ALL {
        assert!(manifest.files_for(platform).all(|entry| entry.component.applies_to(platform)));
    }
}
