//! `wmco version`: the semver version of this build and the git commit it was built from.

use serde::Serialize;

use crate::cli_support::{Outcome, OutputArgs, print_stdout, render};

/// The `kind` of the document `wmco version -o json|yaml` prints.
pub const KIND: &str = "Version";

/// Arguments of `wmco version`.
#[derive(Debug, clap::Args)]
pub struct VersionArgs {
    #[command(flatten)]
    output: OutputArgs,
}

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
pub fn run(args: &VersionArgs) -> anyhow::Result<Outcome> {
    let info = current();
    print_stdout(&render(args.output.format, KIND, &info, || {
        format!("wmco {} (commit {})\n", info.version, info.commit)
    })?)?;
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli_support::OutputFormat;

    #[test]
    fn version_is_semver() {
        let info = current();
        assert!(semver::Version::parse(info.version).is_ok(), "{} is not semver", info.version);
        assert!(!info.commit.is_empty());
    }

    #[test]
    fn json_has_version_and_commit_after_api_version_and_kind() {
        let text = render(OutputFormat::Json, KIND, &current(), String::new).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["apiVersion"], "cli.wmco-rs.io/v1alpha1");
        assert_eq!(json["kind"], "Version");
        assert!(json["version"].is_string());
        assert!(json["commit"].is_string());
        assert!(text.starts_with(r#"{"apiVersion":"cli.wmco-rs.io/v1alpha1","kind":"Version","version":"#), "{text}");
    }

    #[test]
    fn yaml_is_the_same_document() {
        let text = render(OutputFormat::Yaml, KIND, &current(), String::new).unwrap();
        let yaml: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&render(OutputFormat::Json, KIND, &current(), String::new).unwrap()).unwrap();
        assert_eq!(yaml, json);
    }
}
