//! The words every wmco crate shares, defined once: the cluster's [`Platform`] (and [`PlatformName`] for platforms
//! this product does not know), a host record's [`InstancePhase`] and [`InstanceOrigin`], the [`DisruptionKind`] a
//! host asks the unavailability budget for, a network in CIDR notation ([`IpCidr`]), an image mirror's
//! [`MirrorKind`], a file's [`Sha256Digest`], and the bounded [`excerpt`] of a host's text that error messages
//! quote.
//!
//! This crate is the ground floor: it depends on serde, `sha2` and `hex` only (plus `clap` and `schemars` behind the
//! features of those names), so that the pure crates keep reading `kubectl -o yaml` input without k8s-openapi or
//! kube.
//!
//! ```
//! use wmco_vocabulary::{InstancePhase, Platform};
//!
//! let platform: Platform = serde_json::from_str("\"VSphere\"")?;
//! assert_eq!(platform.cli_name(), "vsphere");
//! assert_eq!(InstancePhase::WaitingForNode.to_string(), "WaitingForNode");
//! # Ok::<(), serde_json::Error>(())
//! ```

mod cidr;
mod digest;
mod disruption;
mod excerpt;
mod instance;
mod mirror;
mod platform;
mod reboot_marker;

pub use cidr::{CidrError, IpCidr};
pub use digest::{DigestParseError, Sha256Digest};
pub use disruption::DisruptionKind;
pub use excerpt::{EXCERPT_CHARS, excerpt};
pub use instance::{BOOTSTRAP_WINDOW, BOOTSTRAP_WINDOW_REOPEN_AFTER, InstanceOrigin, InstancePhase};
pub use mirror::MirrorKind;
pub use platform::{Platform, PlatformName, UnknownPlatform};
pub use reboot_marker::RebootMarker;
