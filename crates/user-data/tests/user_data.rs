//! wmco-user-data against real keys (written by `fixtures/make.sh` with ssh-keygen and openssl), the golden user
//! data of every platform, and the proof that the script provisions a simulated Windows host the operator can
//! then log in to with its private key.

#![allow(clippy::unwrap_used, reason = "test fixtures and helpers: a failed setup must panic")]

use std::path::{Path, PathBuf};
use std::time::Duration;

use wmco_user_data::{
    EcdsaCurve, KeyError, KeyFormat, KeyKind, Platform, PublicKey, Weakness, provisioning_script, render_user_data,
    script_from_user_data,
};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// `<type> <base64>` of a `.pub` file written by ssh-keygen.
fn expected_line(name: &str) -> String {
    fixture(&format!("{name}.pub")).split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

#[test]
fn public_keys_derived_from_private_keys_match_ssh_keygen() {
    let cases = [
        ("ed25519-openssh.pem", KeyKind::Ed25519),
        ("ed25519-pkcs8.pem", KeyKind::Ed25519),
        ("rsa-2048-pkcs1.pem", KeyKind::Rsa { bits: 2048 }),
        ("rsa-2048-pkcs8.pem", KeyKind::Rsa { bits: 2048 }),
        ("rsa-3072-openssh.pem", KeyKind::Rsa { bits: 3072 }),
        ("ecdsa-p256-sec1.pem", KeyKind::Ecdsa(EcdsaCurve::P256)),
        ("ecdsa-p384-openssh.pem", KeyKind::Ecdsa(EcdsaCurve::P384)),
        ("ecdsa-p521-pkcs8.pem", KeyKind::Ecdsa(EcdsaCurve::P521)),
    ];
    for (name, kind) in cases {
        let key = PublicKey::from_private_key_pem(&fixture(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(key.kind(), kind, "{name}");
        assert_eq!(key.authorized_key_line(), expected_line(name), "{name}");
        let from_line = PublicKey::parse(&fixture(&format!("{name}.pub"))).unwrap();
        assert_eq!(from_line, key, "{name}: the .pub line reads as the same key");
    }
}

#[test]
fn weak_keys_are_refused_naming_the_weakness_in_every_encoding() {
    let cases = [
        ("rsa-1024-pkcs1.pem", Weakness::RsaTooShort { bits: 1024 }),
        ("rsa-1024-pkcs1.pem.pub", Weakness::RsaTooShort { bits: 1024 }),
        ("dsa-openssh.pem", Weakness::Dsa),
        ("dsa-openssh.pem.pub", Weakness::Dsa),
        ("dsa-pem.pem", Weakness::Dsa),
        ("ecdsa-p224-pkcs8.pem", Weakness::EcdsaP224),
        ("ecdsa-p224-sec1.pem", Weakness::EcdsaP224),
    ];
    for (name, weakness) in cases {
        let error = PublicKey::parse(&fixture(name)).unwrap_err();
        assert_eq!(error, KeyError::Weak(weakness), "{name}");
        assert_eq!(error.weakness(), Some(weakness));
    }
    let error = PublicKey::parse(&fixture("ecdsa-p224-sec1.pem")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "weak key: ECDSA keys on curve P-224 are not accepted (use P-256 or larger, Ed25519, or RSA >= 2048)"
    );
}

#[test]
fn encrypted_keys_are_refused_without_echoing_material() {
    let text = fixture("rsa-2048-encrypted-pkcs8.pem");
    let error = PublicKey::parse(&text).unwrap_err();
    assert_eq!(error, KeyError::Encrypted { format: KeyFormat::Pkcs8 });
    let body_line = text.lines().nth(1).unwrap();
    assert!(!format!("{error:?}{error}").contains(&body_line[..20]));
}

#[test]
fn the_hash_is_the_go_operators_pub_key_hash() {
    let key = PublicKey::parse(&fixture("ed25519-openssh.pem")).unwrap();
    // `printf '%s' "$(cut -d' ' -f1-2 fixtures/ed25519-openssh.pem.pub)" | sha256sum`
    assert_eq!(key.pub_key_hash(), "2ce4e0e3708aaf60596c191259853dd02d2e857952d4bb864c8da396113e1af8");
}

/// Re-encodes `pem` with the byte at `index` (modulo the body length) XORed with `flip`.
fn corrupted(pem: &str, index: usize, flip: u8) -> String {
    use base64::Engine as _;
    let mut lines: Vec<&str> = pem.lines().collect();
    let (first, last) = (lines.remove(0), lines.pop().unwrap());
    let mut body = base64::engine::general_purpose::STANDARD.decode(lines.concat()).unwrap();
    let position = index % body.len();
    body[position] ^= flip;
    format!("{first}\n{}\n{last}\n", base64::engine::general_purpose::STANDARD.encode(body))
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// The operator reads keys an admin pasted into a Secret: damaged DER or wire data is an error, never a panic,
    /// and whatever still parses is a key that passes the weak-key rules.
    #[test]
    fn damaged_private_keys_never_panic(
        name in proptest::sample::select(vec![
            "ed25519-openssh.pem", "ed25519-pkcs8.pem", "rsa-2048-pkcs1.pem", "rsa-2048-pkcs8.pem",
            "ecdsa-p256-sec1.pem", "ecdsa-p384-openssh.pem", "ecdsa-p521-pkcs8.pem", "ecdsa-p224-pkcs8.pem",
        ]),
        index in 0usize..4096,
        flip in 1u8..=255,
    ) {
        if let Ok(key) = PublicKey::parse(&corrupted(&fixture(name), index, flip)) {
            proptest::prop_assert_eq!(wmco_user_data::weakness_of(key.kind()), None);
        }
    }
}

fn golden_path(platform: Platform) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{}.txt", platform.cli_name()))
}

#[test]
fn user_data_matches_the_golden_file_of_every_platform() {
    let key = PublicKey::parse(&fixture("ed25519-openssh.pem")).unwrap();
    for platform in Platform::ALL {
        let rendered = render_user_data(&key, platform);
        let path = golden_path(platform);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, &rendered).unwrap();
        }
        let golden = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        assert_eq!(rendered, golden, "{platform}: rerun with UPDATE_GOLDEN=1 after a deliberate change");
    }
}

#[test]
fn the_script_fits_an_encoded_command_line() {
    let key = PublicKey::parse(&fixture("rsa-3072-openssh.pem")).unwrap();
    let script = provisioning_script(&key);
    // windows-commands.md §3: a -EncodedCommand script under cmd.exe holds about 3,000 characters; user data has
    // no such limit, but staying under it lets the operator also run the script over SSH as one command.
    assert!(script.len() < 2_900, "{} characters", script.len());
    assert!(script.is_ascii());
}

mod simulator {
    use super::*;
    use winhost_sim::disk::WinPath;
    use winhost_sim::fleet::{Fleet, NewHost};
    use winhost_sim::host::{ADMIN_AUTHORIZED_KEYS, Latency};
    use winhost_sim::ps::{ErrorStream, run_script};
    use winhost_sim::scm::{StartType, State};
    use winhost_sim::ssh::lock;
    use wmco_ssh_transport::{HostConfig, PrivateKey, RemoteCommand, RemoteHost as _, RetryPolicy, SshHost};

    fn ssh_to(address: std::net::SocketAddr, private_key_pem: &str) -> SshHost {
        let mut config =
            HostConfig::new(address.ip().to_string(), "Administrator", PrivateKey::from_pem(private_key_pem).unwrap());
        config.port = address.port();
        config.connect_timeout = Duration::from_secs(5);
        config.connect_retry = RetryPolicy::never();
        SshHost::new(config).unwrap()
    }

    /// An unprovisioned host refuses the operator's key; after the rendered user data ran through the simulator's
    /// PowerShell evaluator (as `POST /hosts/<name>/provision` does), the key logs in and runs a command, every
    /// command of the script was understood, and the host holds what the script promises.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn user_data_provisions_a_host_the_operator_key_can_log_in_to() {
        let private_key = fixture("ed25519-openssh.pem");
        let key = PublicKey::parse(&private_key).unwrap();
        let base = tempfile::tempdir().unwrap();
        let mut fleet = Fleet::new(base.path().to_path_buf(), 0, Latency::zero());
        let info = fleet.add(NewHost::default()).await.unwrap();
        let server = fleet.server(&info.name).unwrap();

        let before = ssh_to(info.ssh_address, &private_key);
        let refused = before.run(&RemoteCommand::new("hostname", Duration::from_secs(10))).await.unwrap_err();
        assert!(refused.to_string().contains("auth"), "{refused}");

        let user_data = render_user_data(&key, Platform::Aws);
        let script = script_from_user_data(&user_data).to_owned();
        let host = std::sync::Arc::clone(&server.host);
        let output = tokio::task::spawn_blocking(move || run_script(&mut lock(&host), &script, ErrorStream::Text))
            .await
            .unwrap();
        assert_eq!((output.code, output.stderr.as_str()), (0, ""), "stdout: {}", output.stdout);

        {
            let host = lock(&server.host);
            assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
            let path = WinPath::parse(ADMIN_AUTHORIZED_KEYS).unwrap();
            let keys = String::from_utf8(host.disk.read(&path).unwrap()).unwrap();
            assert_eq!(keys, format!("{}\r\n", key.authorized_key_line()));
            assert_eq!(host.acls[&path.key()], ["*S-1-5-32-544:F", "*S-1-5-18:F"]);
            let rules: Vec<&str> = host.firewall.iter().map(|rule| rule.name.as_str()).collect();
            assert_eq!(rules, ["OpenSSH-Server-In-TCP", "ContainerLogsPort", "WindowsExporter"]);
            let config =
                String::from_utf8(host.disk.read(&WinPath::parse(wmco_user_data::SSHD_CONFIG).unwrap()).unwrap())
                    .unwrap();
            assert_eq!(config, wmco_user_data::SSHD_CONFIG_LINES.map(|line| format!("{line}\r\n")).concat());
            let sshd = host.scm.get("sshd").expect("installing the capability registered sshd");
            assert_eq!((sshd.start_type, sshd.state), (StartType::Auto, State::Running));
        }

        let after = ssh_to(info.ssh_address, &private_key);
        let output = after.run(&RemoteCommand::new("hostname", Duration::from_secs(10))).await.unwrap();
        assert_eq!((output.exit_code, output.stdout_text().as_ref()), (0, format!("{}\r\n", info.name).as_str()));
    }
}
