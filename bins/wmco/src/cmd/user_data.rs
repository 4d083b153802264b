//! `wmco user-data --public-key FILE [--platform P]`: prints the `windows-user-data` script for the operator's key
//! offline, exactly as the operator writes it into the Secret. Exit 1 naming the weakness for a weak key, 2 when
//! the file is unreadable or not a key.

use std::path::PathBuf;

use serde::Serialize;
use wmco_user_data::{KeyError, Platform, PublicKey, Weakness, render_user_data};

use crate::cli_support::{Outcome, OutputArgs, OutputFormat, UnusableInput, print_stdout, render};

/// The `kind` of the document `wmco user-data -o json|yaml` prints: the script and the key's facts, or (exit 1)
/// the file and `weakKey`, the reason the key was refused.
pub const KIND: &str = "UserData";

/// Arguments of `wmco user-data`.
#[derive(Debug, clap::Args)]
pub struct UserDataArgs {
    /// The operator's key: an OpenSSH public key line (`.pub` file) or the unencrypted private key itself (OpenSSH,
    /// PKCS#8, PKCS#1 or SEC1 PEM), whose public half is derived.
    #[arg(long, value_name = "FILE")]
    pub public_key: PathBuf,

    /// The platform whose provisioning agent runs the script: every one but `gcp` gets the `<powershell>` and
    /// `<persist>` tags.
    #[arg(long, default_value = "none", value_parser = parse_platform)]
    pub platform: Platform,

    #[command(flatten)]
    pub output: OutputArgs,
}

fn parse_platform(name: &str) -> Result<Platform, String> {
    name.parse().map_err(|error: wmco_user_data::UnknownPlatform| error.to_string())
}

/// The result with `-o json|yaml`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct UserDataReport {
    platform: String,
    key_type: String,
    pub_key_hash: String,
    authorized_key: String,
    user_data: String,
}

/// A refused key with `-o json|yaml`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WeakKeyReport<'a> {
    file: &'a PathBuf,
    weak_key: String,
}

/// Runs the subcommand.
pub fn run(args: &UserDataArgs) -> anyhow::Result<Outcome> {
    let format = args.output.format;
    let key = match read_key(args)? {
        Ok(key) => key,
        Err(weakness) => {
            if format == OutputFormat::Human {
                eprintln!("{}", weak_key_message(args, weakness));
            } else {
                let refusal = WeakKeyReport { file: &args.public_key, weak_key: weakness.to_string() };
                print_stdout(&render(format, KIND, &refusal, String::new)?)?;
            }
            return Ok(Outcome::Findings);
        }
    };
    let user_data = render_user_data(&key, args.platform);
    let report = report(&key, args.platform, user_data);
    print_stdout(&render(format, KIND, &report, || report.user_data.clone())?)?;
    Ok(Outcome::Clean)
}

/// The key, or its weakness; an unreadable file or a text that is no usable key is unusable input.
fn read_key(args: &UserDataArgs) -> anyhow::Result<Result<PublicKey, Weakness>> {
    let file = args.public_key.display();
    let text = std::fs::read_to_string(&args.public_key)
        .map_err(|error| anyhow::Error::new(UnusableInput(format!("cannot read {file}: {error}"))))?;
    match PublicKey::parse(&text) {
        Ok(key) => Ok(Ok(key)),
        Err(KeyError::Weak(weakness)) => Ok(Err(weakness)),
        Err(error) => Err(anyhow::Error::new(UnusableInput(format!("{file}: {error}")))),
    }
}

fn weak_key_message(args: &UserDataArgs, weakness: Weakness) -> String {
    format!(
        "{}: weak key refused: {weakness}; generate a new key (for example `ssh-keygen -t ed25519`) and put it \
         in Secret cloud-private-key",
        args.public_key.display()
    )
}

fn report(key: &PublicKey, platform: Platform, user_data: String) -> UserDataReport {
    UserDataReport {
        platform: platform.cli_name().to_owned(),
        key_type: key.type_name().to_owned(),
        pub_key_hash: key.pub_key_hash(),
        authorized_key: key.authorized_key_line(),
        user_data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/user-data/tests/fixtures").join(name)
    }

    fn args(file: PathBuf, platform: Platform) -> UserDataArgs {
        UserDataArgs { public_key: file, platform, output: OutputArgs { format: OutputFormat::Json } }
    }

    #[test]
    fn a_good_key_exits_0() {
        for name in ["ed25519-openssh.pem", "ed25519-openssh.pem.pub", "rsa-2048-pkcs1.pem"] {
            let outcome = run(&args(fixture(name), Platform::Aws)).unwrap();
            assert_eq!(outcome, Outcome::Clean, "{name}");
        }
    }

    #[test]
    fn the_json_report_carries_the_user_data_and_hash() {
        let key = read_key(&args(fixture("ed25519-openssh.pem"), Platform::Gcp)).unwrap().unwrap();
        let value = serde_json::to_value(report(&key, Platform::Gcp, render_user_data(&key, Platform::Gcp))).unwrap();
        assert_eq!(value["platform"], "gcp");
        assert_eq!(value["keyType"], "ssh-ed25519");
        assert_eq!(value["pubKeyHash"], "2ce4e0e3708aaf60596c191259853dd02d2e857952d4bb864c8da396113e1af8");
        let golden = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/user-data/tests/golden/gcp.txt"),
        )
        .unwrap();
        assert_eq!(value["userData"], golden.as_str());
    }

    #[test]
    fn weak_keys_exit_1_naming_the_weakness() {
        for (name, weakness) in [
            ("rsa-1024-pkcs1.pem", "RSA key of 1024 bits is shorter than the 2048 bits required"),
            ("dsa-openssh.pem.pub", "DSA keys are not accepted"),
            ("ecdsa-p224-pkcs8.pem", "ECDSA keys on curve P-224 are not accepted"),
        ] {
            let file_args = args(fixture(name), Platform::None);
            assert_eq!(run(&file_args).unwrap(), Outcome::Findings, "{name}");
            let found = read_key(&file_args).unwrap().unwrap_err();
            let message = weak_key_message(&file_args, found);
            assert!(message.contains(&format!("{name}: weak key refused: {weakness}")), "{message}");
        }
    }

    #[test]
    fn unreadable_and_non_key_files_are_unusable_input() {
        let missing = run(&args(fixture("no-such-file"), Platform::None)).unwrap_err();
        assert!(missing.is::<UnusableInput>(), "{missing:#}");
        assert!(missing.to_string().starts_with("cannot read "), "{missing}");
        let not_a_key = run(&args(fixture("make.sh"), Platform::None)).unwrap_err();
        assert!(not_a_key.is::<UnusableInput>(), "{not_a_key:#}");
        let encrypted = run(&args(fixture("rsa-2048-encrypted-pkcs8.pem"), Platform::None)).unwrap_err();
        assert!(encrypted.to_string().ends_with("is encrypted with a passphrase; provide an unencrypted key"));
    }

    #[test]
    fn platform_names_parse_and_unknown_ones_are_refused() {
        assert_eq!(parse_platform("vsphere"), Ok(Platform::VSphere));
        assert_eq!(
            parse_platform("openstack"),
            Err("unknown platform `openstack` (expected aws, azure, gcp, vsphere, nutanix or none)".to_owned())
        );
    }
}
