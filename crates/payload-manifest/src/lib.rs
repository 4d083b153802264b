//! The Windows node payload: its manifest, its verification, and the configuration files rendered for a host.
//!
//! - [`Manifest`] is `payload/manifest.yaml`: every component the product ships, its upstream source, and which
//!   payload file goes to which Windows destination ([`WinPath`](wmco_windows_services::WinPath)) on which
//!   [`Platform`].
//! - [`Payload::load`] checks a payload directory against the manifest and its `sha256sum`, hashing files in
//!   parallel and reporting every [`PayloadProblem`] at once.
//! - [`check_payload_binaries`] proves every Go-built binary of a real payload is what the manifest claims (PE
//!   headers, Go build information: main package, module and version, `GOOS`/`GOARCH`, `CGO_ENABLED=0`,
//!   `-trimpath`), reporting every [`IdentityMismatch`]; a synthetic payload is reported as such, never checked.
//! - [`write_synthetic_payload`] writes a deterministic synthetic payload for tests and benchmarks.
//! - [`render`] turns typed cluster and host inputs into the host's configuration files.
//! - [`HostFileSet`] is everything one host must hold, with a content hash that tells whether it is up to date.
//!
//! Nothing here talks to a cluster or a host: callers read the inputs and act on the results.

mod binary_identity;
mod byte_size;
mod checksums;
mod host_files;
mod manifest;
mod parallel;
mod payload;
mod payload_path;
pub mod render;
mod synthetic;

pub use binary_identity::{
    BinaryIdentity, BinaryIdentityError, BuildInfoError, BuildSetting, GO_BUILD_INFO_MAGIC, GoBuildInfo, GoModule,
    IdentityCheck, IdentityMismatch, MAX_STRING_LEN, PayloadBinaryCheck, PeFormat, PeHeaders, PeImage, check_binary,
    check_payload_binaries, identity_mismatches, inspect_binary, read_go_build_info,
};
pub use byte_size::{ByteSize, ByteSizeError};
pub use checksums::{BadChecksumLine, BadChecksumReason, CHECKSUM_FILE_NAME, ChecksumList};
pub use host_files::{HostFile, HostFileContent, HostFileSet, HostFileSetError};
pub use manifest::{
    Component, ComponentFile, GoSource, MANIFEST_PATH_IN_WORKSPACE, MANIFEST_SCHEMA, Manifest, ManifestError,
    ManifestFile, ManifestProblem, PRODUCT_MANIFEST_YAML, SYNTHETIC_MARKER_FILE_NAME, Source, VersionCheck,
};
pub use payload::{Payload, PayloadError, PayloadFile, PayloadProblem};
pub use payload_path::{PayloadPath, PayloadPathError};
pub use synthetic::{SyntheticError, SyntheticPayload, SyntheticScale, write_synthetic_payload};
pub use wmco_vocabulary::Platform;
pub use wmco_vocabulary::{DigestParseError, Sha256Digest};
