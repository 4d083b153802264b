//! wmco-user-data against real keys (written by `fixtures/make.sh` with ssh-keygen and openssl), the golden user
//! data of every platform, and the proof that the script provisions a simulated Windows host the operator can
//! then log in to with its private key: the Administrator account, SSH, and on AWS EC2Launch v2 and the persistent
//! metadata routes, on fresh hosts, images with `capi`, old and current EC2Launch, and a host without the internet.

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
fn the_script_fits_an_encoded_command_line_and_aws_user_data_fits_ec2() {
    let key = PublicKey::parse(&fixture("rsa-3072-openssh.pem")).unwrap();
    for platform in Platform::ALL {
        let script = provisioning_script(&key, platform);
        assert!(script.is_ascii(), "{platform}");
        if platform == Platform::Aws {
            // EC2 takes at most 16 KiB of user data (before base64).
            let user_data = render_user_data(&key, platform);
            assert!(user_data.len() < 16 * 1024, "{platform}: {} characters", user_data.len());
        } else {
            // windows-commands.md §3: a -EncodedCommand script under cmd.exe holds about 3,000 characters; user
            // data has no such limit, but staying under it lets the operator also run the script over SSH as one
            // command. AWS's EC2Launch part runs only from user data.
            assert!(script.len() < 2_900, "{platform}: {} characters", script.len());
        }
    }
}

mod simulator {
    use super::*;
    use winhost_sim::acl;
    use winhost_sim::disk::WinPath;
    use winhost_sim::fleet::{Fleet, NewHost};
    use winhost_sim::host::{ADMIN_AUTHORIZED_KEYS, Host, Identity, Latency, LocalUser, Output};
    use winhost_sim::ps::{ErrorStream, run_script};
    use winhost_sim::scm::{StartType, State};
    use winhost_sim::ssh::lock;
    use wmco_ssh_transport::{HostConfig, PrivateKey, RemoteCommand, RemoteHost as _, RetryPolicy, SshHost};
    use wmco_user_data::EC2LAUNCH_FAILED_EXIT_CODE;

    fn ssh_to(address: std::net::SocketAddr, private_key_pem: &str) -> SshHost {
        let mut config =
            HostConfig::new(address.ip().to_string(), "Administrator", PrivateKey::from_pem(private_key_pem).unwrap());
        config.port = address.port();
        config.connect_timeout = Duration::from_secs(5);
        config.connect_retry = RetryPolicy::never();
        SshHost::new(config).unwrap()
    }

    fn operator_key() -> PublicKey {
        PublicKey::parse(&fixture("ed25519-openssh.pem")).unwrap()
    }

    /// A fresh simulated host without an SSH server (the state is all these tests read).
    fn fresh_host() -> (tempfile::TempDir, Host) {
        let root = tempfile::tempdir().unwrap();
        let identity = Identity {
            hostname: "win-user-data".into(),
            fqdn: "win-user-data.example.test".into(),
            build: 20348,
            ubr: 2849,
            node_ip: "203.0.113.30".parse().unwrap(),
        };
        let host = Host::new(identity, root.path(), Latency::zero()).unwrap();
        (root, host)
    }

    /// Runs `platform`'s rendered user data on `host` as its first boot would (as `POST /hosts/<name>/provision`
    /// does).
    fn first_boot(host: &mut Host, platform: Platform) -> Output {
        let user_data = render_user_data(&operator_key(), platform);
        run_script(host, script_from_user_data(&user_data), ErrorStream::Text)
    }

    /// What the SSH part promises: every command understood, the key alone in the keys file with its ACL, the three
    /// rules, the configuration, and sshd running and starting automatically.
    fn assert_ssh_ready(host: &Host) {
        assert!(host.unknown_commands.is_empty(), "{:?}", host.unknown_commands);
        let path = WinPath::parse(ADMIN_AUTHORIZED_KEYS).unwrap();
        let keys = String::from_utf8(host.disk.read(&path).unwrap()).unwrap();
        assert_eq!(keys, format!("{}\r\n", operator_key().authorized_key_line()));
        let acl = host.disk.acl_settings(&path);
        let grants: Vec<(&str, u32)> = acl.explicit.iter().map(|entry| (entry.sid.as_str(), entry.mask)).collect();
        assert!(acl.protected);
        assert_eq!(grants, [(acl::ADMINISTRATORS, acl::FULL_CONTROL), (acl::SYSTEM, acl::FULL_CONTROL)]);
        let rules: Vec<&str> = host.firewall.iter().map(|rule| rule.name.as_str()).collect();
        assert_eq!(rules, ["OpenSSH-Server-In-TCP", "ContainerLogsPort", "WindowsExporter"]);
        let config =
            String::from_utf8(host.disk.read(&WinPath::parse(wmco_user_data::SSHD_CONFIG).unwrap()).unwrap()).unwrap();
        assert_eq!(config, wmco_user_data::SSHD_CONFIG_LINES.map(|line| format!("{line}\r\n")).concat());
        let sshd = host.scm.get("sshd").expect("installing the capability registered sshd");
        assert_eq!((sshd.start_type, sshd.state), (StartType::Auto, State::Running));
    }

    fn user<'h>(host: &'h Host, name: &str) -> &'h LocalUser {
        host.local_users.iter().find(|user| user.name == name).unwrap_or_else(|| panic!("no user {name}"))
    }

    /// Whether the account is enabled and whether a password was set on the host.
    fn state(user: &LocalUser) -> (bool, bool) {
        (user.enabled, user.password_set)
    }

    /// An unprovisioned host refuses the operator's key; after the rendered AWS user data ran through the simulator's
    /// PowerShell evaluator, the key logs in and runs a command, every command of the script was understood, the
    /// disabled Administrator is enabled with a password, EC2Launch v2 was installed and made the metadata routes
    /// persistent.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn user_data_provisions_a_host_the_operator_key_can_log_in_to() {
        let private_key = fixture("ed25519-openssh.pem");
        let base = tempfile::tempdir().unwrap();
        let mut fleet = Fleet::new(base.path().to_path_buf(), 0, Latency::zero());
        let info = fleet.add(NewHost::default()).await.unwrap();
        let server = fleet.server(&info.name).unwrap();

        let before = ssh_to(info.ssh_address, &private_key);
        let refused = before.run(&RemoteCommand::new("hostname", Duration::from_secs(10))).await.unwrap_err();
        assert!(refused.to_string().contains("auth"), "{refused}");

        let host = std::sync::Arc::clone(&server.host);
        let output = tokio::task::spawn_blocking(move || first_boot(&mut lock(&host), Platform::Aws)).await.unwrap();
        assert_eq!((output.code, output.stdout.as_str(), output.stderr.as_str()), (0, "", ""));

        {
            let host = lock(&server.host);
            assert_ssh_ready(&host);
            assert_eq!(state(user(&host, "Administrator")), (true, true));
            assert_eq!(host.ec2launch_version.as_deref(), Some(winhost_sim::ec2launch::LATEST_VERSION));
            assert_eq!(host.persistent_routes, winhost_sim::ec2launch::METADATA_ROUTES);
            let download = WinPath::parse(wmco_user_data::EC2LAUNCH_MSI_DOWNLOAD).unwrap();
            assert_eq!(host.disk.entry(&download), None, "the installer is deleted after the install");
        }

        let after = ssh_to(info.ssh_address, &private_key);
        let output = after.run(&RemoteCommand::new("hostname", Duration::from_secs(10))).await.unwrap();
        assert_eq!((output.exit_code, output.stdout_text().as_ref()), (0, format!("{}\r\n", info.hostname).as_str()));
    }

    /// Platform None (as every platform but AWS): the Administrator handling and SSH, nothing of EC2Launch; a second
    /// run (AWS re-runs user data at every boot; the others may) changes nothing and prints nothing.
    #[test]
    fn platform_none_enables_the_administrator_and_leaves_ec2launch_alone() {
        let (_root, mut host) = fresh_host();
        assert_eq!(state(user(&host, "Administrator")), (false, false), "a fresh host's Administrator is disabled");
        for _ in 0..2 {
            let output = first_boot(&mut host, Platform::None);
            assert_eq!((output.code, output.stdout.as_str(), output.stderr.as_str()), (0, "", ""));
            assert_ssh_ready(&host);
            assert_eq!(state(user(&host, "Administrator")), (true, true));
            assert_eq!(host.ec2launch_version, None);
            assert!(host.persistent_routes.is_empty());
        }
    }

    /// Images with a `capi` user (Azure) log in with it: `Administrator` is left as it is; an enabled Administrator
    /// keeps its password everywhere.
    #[test]
    fn the_administrator_is_left_alone_when_capi_exists_or_when_it_is_enabled() {
        let (_root, mut host) = fresh_host();
        host.local_users.push(LocalUser { name: "capi".into(), enabled: true, password_set: true });
        assert_eq!(first_boot(&mut host, Platform::Azure).code, 0);
        assert_ssh_ready(&host);
        assert_eq!(state(user(&host, "Administrator")), (false, false));

        let (_root, mut host) = fresh_host();
        host.local_users[0].enabled = true;
        assert_eq!(first_boot(&mut host, Platform::VSphere).code, 0);
        assert_eq!(state(user(&host, "Administrator")), (true, false), "an enabled account keeps its password");
    }

    /// An AMI with an EC2Launch v2 older than the minimum is upgraded (keeping its configuration: `ADDLOCAL=Basic`);
    /// a current one is not downloaded again (the host here cannot download at all) and adds the routes.
    #[test]
    fn aws_upgrades_an_old_ec2launch_and_keeps_a_current_one() {
        let (_root, mut host) = fresh_host();
        host.install_ec2launch("2.0.863").unwrap();
        let output = first_boot(&mut host, Platform::Aws);
        assert_eq!((output.code, output.stdout.as_str()), (0, ""), "{output:?}");
        assert_eq!(host.ec2launch_version.as_deref(), Some(winhost_sim::ec2launch::LATEST_VERSION));
        assert_eq!(host.persistent_routes, winhost_sim::ec2launch::METADATA_ROUTES);

        let (_root, mut host) = fresh_host();
        host.install_ec2launch(wmco_user_data::EC2LAUNCH_MINIMUM_VERSION).unwrap();
        host.downloads.clear();
        let output = first_boot(&mut host, Platform::Aws);
        assert_eq!((output.code, output.stdout.as_str()), (0, ""), "{output:?}");
        assert_eq!(host.ec2launch_version.as_deref(), Some(wmco_user_data::EC2LAUNCH_MINIMUM_VERSION));
        assert_eq!(host.persistent_routes, winhost_sim::ec2launch::METADATA_ROUTES);
        assert_ssh_ready(&host);
    }

    /// A host that cannot download the installer (a disconnected cluster with an AMI lacking EC2Launch v2): SSH is
    /// set up all the same, and the failure is printed and ends the script with its own exit code.
    #[test]
    fn aws_without_the_installer_still_sets_up_ssh_and_reports_the_ec2launch_failure() {
        let (_root, mut host) = fresh_host();
        host.downloads.clear();
        let output = first_boot(&mut host, Platform::Aws);
        assert_eq!(output.code, u32::try_from(EC2LAUNCH_FAILED_EXIT_CODE).unwrap(), "{output:?}");
        assert_eq!(
            output.stdout,
            "SSH is set up, but EC2Launch v2 is not current or the metadata routes are not persistent:\r\n\
             Unable to connect to the remote server\r\n"
        );
        assert_ssh_ready(&host);
        assert_eq!(state(user(&host, "Administrator")), (true, true));
        assert_eq!(host.ec2launch_version, None);
        assert!(host.persistent_routes.is_empty());
    }
}
