//! The `windows-user-data` Secret's content, rendered from the operator's key.
//!
//! A new Windows Machine runs its user data once its cloud agent starts. The script rendered here
//! ([`provisioning_script`]) enables the local `Administrator` account with a random password made on the host when
//! there is no `capi` user, installs and starts OpenSSH Server, opens TCP 22, 10250 and 9182, allows public-key
//! authentication only, and authorizes exactly the operator's key for administrators, with the ACL sshd insists on;
//! on AWS it then brings EC2Launch v2 to [`EC2LAUNCH_MINIMUM_VERSION`] and makes the instance metadata routes
//! persistent. It stays inside the PowerShell subset of `windows-commands.md` §8 and the few extensions
//! `docs/user-data.md` lists, so the simulated hosts run it as a real host would. [`render_user_data`] adds the
//! platform's wrapper.
//!
//! The key comes from the operator's private key (`cloud-private-key`) or a public key line ([`PublicKey::parse`]);
//! weak keys (RSA below 2048 bits, DSA, ECDSA P-224) are refused with [`KeyError::Weak`] naming the [`Weakness`].
//! Key material never appears in errors or `Debug` output of errors.
//!
//! ```
//! use wmco_user_data::{KeyError, Platform, PublicKey, Weakness, render_user_data};
//!
//! let key = PublicKey::parse("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDJqxXtLTB09WrBv58kWkXoCkTTC3YJP1KolNbUZY5jp")?;
//! let user_data = render_user_data(&key, Platform::Azure);
//! assert!(user_data.contains("Add-WindowsCapability -Online -Name OpenSSH.Server~~~~0.0.1.0"));
//!
//! // A 1024-bit RSA key (OpenSSH line; the modulus is all that matters here).
//! let short_rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDJF1Q+Ti6uacQrPj36nXIfIBYsA69g9SN0jQZuvpx/FZaGUJaikVAwSvLm6\
//!                  EDetSYmHswkmqcnbc5Rv1X/4fgkEVsSf5Nu5Pj16hWbG2Q7cuKdauL89BN+gLvo4+e1/GNdmf5pQQzc6TRTGgoSuX1nozNRMRB\
//!                  W6lNls5D/A5rcpQ==";
//! assert_eq!(PublicKey::parse(short_rsa), Err(KeyError::Weak(Weakness::RsaTooShort { bits: 1024 })));
//! # Ok::<(), KeyError>(())
//! ```

mod error;
mod key;
mod platform;
mod script;
mod strength;

pub use error::{KeyError, KeyFormat, Weakness};
pub use key::{EcdsaCurve, KeyKind, PublicKey};
pub use platform::{render_user_data, script_from_user_data, wraps_in_tags};
pub use script::{
    ADMINISTRATOR_USER, ADMINISTRATORS_AUTHORIZED_KEYS, CAPI_USER, EC2LAUNCH_EXE, EC2LAUNCH_FAILED_EXIT_CODE,
    EC2LAUNCH_MINIMUM_VERSION, EC2LAUNCH_MSI_DOWNLOAD, EC2LAUNCH_MSI_URL, FIREWALL_RULES, FirewallRule,
    OPENSSH_SERVER_CAPABILITY, SSH_DIRECTORY, SSHD_CONFIG, SSHD_CONFIG_LINES, provisioning_script,
};
pub use strength::{MIN_RSA_BITS, weakness_of};
pub use wmco_vocabulary::{Platform, UnknownPlatform};
