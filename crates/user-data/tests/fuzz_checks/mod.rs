//! What the `user_data_key` fuzz target checks on each input: `fuzz/fuzz_targets/user_data_key.rs` includes this
//! file, and `tests/fuzz_replay.rs` runs the committed corpus through it, so both check the same thing.
//!
//! An input is the text of the operator's key (the `cloud-private-key` Secret, or a public key line), read by
//! [`PublicKey::parse`], [`PublicKey::from_private_key_pem`] and [`PublicKey::from_openssh`]. Beyond "no panic":
//! an accepted key is never weak, its authorized-key line reads back as the same key, and the user data of every
//! platform authorizes exactly that line.

use wmco_user_data::{Platform, PublicKey, provisioning_script, render_user_data, script_from_user_data, weakness_of};

/// Checks one fuzz input (see the module documentation); panics when a property fails. Returns whether the text
/// was accepted as a key.
pub fn user_data_key(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let private = PublicKey::from_private_key_pem(&text);
    let public = PublicKey::from_openssh(&text);
    let parsed = PublicKey::parse(&text);
    let expected = if text.contains("-----BEGIN ") { &private } else { &public };
    assert_eq!(&parsed, expected);
    for result in [&private, &public] {
        match result {
            Ok(key) => check_key(key),
            Err(error) => assert!(!error.to_string().is_empty()),
        }
    }
    parsed.is_ok()
}

fn check_key(key: &PublicKey) {
    assert_eq!(weakness_of(key.kind()), None, "{key:?} was accepted but is weak");
    let line = key.authorized_key_line();
    assert_eq!(PublicKey::from_openssh(&line).as_ref(), Ok(key), "{line}");
    assert_eq!(key.pub_key_hash().len(), 64);
    for platform in Platform::ALL {
        let script = provisioning_script(key, platform);
        assert!(script.contains(&line), "the {platform} provisioning script does not authorize {line}");
        assert_eq!(script_from_user_data(&render_user_data(key, platform)), script, "{platform}");
    }
}
