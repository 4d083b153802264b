//! `wmco version`: the semver version of this build and the git commit it was built from.

use serde::Serialize;

use crate::cli_support::{Outcome, OutputFormat};

/// The version facts printed by `wmco version`.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct VersionInfo {
    /// The crate version (semver), as written to the `windowsmachineconfig.openshift.io/version` annotation.
    pub version: &'static str,
    /// The short git commit the binary was built from, or `unknown`.
    pub commit: &'static str,
}

/// The version facts of this build.
pub fn current() -> VersionInfo {
    VersionInfo { version: env!("CARGO_PKG_VERSION"), commit: env!("WMCO_GIT_COMMIT") }
}

/// Prints the version in the requested format.
pub fn run(output: OutputFormat) -> anyhow::Result<Outcome> {
    let info = current();
    match output {
        OutputFormat::Human => println!("wmco {} (commit {})", info.version, info.commit),
        OutputFormat::Json => println!("{}", serde_json::to_string(&info)?),
    }
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_semver() {
        let info = current();
        assert!(semver::Version::parse(info.version).is_ok(), "{} is not semver", info.version);
        assert!(!info.commit.is_empty());
    }

    #[test]
    fn json_has_version_and_commit() {
        let json = serde_json::to_value(current()).expect("serializes");
        assert!(json["version"].is_string());
        assert!(json["commit"].is_string());
    }
}
