//! `wmco payload verify DIR`: checks a payload directory against the payload manifest (the compiled-in product
//! manifest, or `--manifest FILE`) and the directory's `sha256sum`, and lists every problem.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wmco_payload_manifest::{Manifest, Payload, PayloadError, PayloadProblem};

use crate::cli_support::{Outcome, OutputFormat, UnusableInput};

/// Arguments of `wmco payload`.
#[derive(Debug, clap::Args)]
pub struct PayloadArgs {
    /// What to do with the payload.
    #[command(subcommand)]
    pub command: PayloadCommand,
}

/// The `wmco payload` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum PayloadCommand {
    /// Verify a payload directory: every required file present, no unexpected file, every file matching
    /// `sha256sum`. Exits 0 when complete, 1 with the list of problems, 2 when the directory or manifest is
    /// unreadable.
    Verify(VerifyArgs),
}

/// Arguments of `wmco payload verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The payload directory.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// A manifest to verify against instead of the product manifest built into this binary.
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
}

/// The result of `wmco payload verify`, as printed with `--output json`.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct VerifyReport {
    /// The payload directory.
    pub dir: PathBuf,
    /// Whether the payload is complete and consistent.
    pub complete: bool,
    /// Whether it carries the `SYNTHETIC` marker (test payloads only).
    pub synthetic: bool,
    /// How many manifest files were verified.
    pub files: usize,
    /// Their total size in bytes.
    pub total_bytes: u64,
    /// Every problem found, sorted by file.
    pub problems: Vec<PayloadProblem>,
}

/// Runs the subcommand.
pub fn run(args: &PayloadArgs, output: OutputFormat) -> anyhow::Result<Outcome> {
    match &args.command {
        PayloadCommand::Verify(verify_args) => verify(verify_args, output),
    }
}

fn verify(args: &VerifyArgs, output: OutputFormat) -> anyhow::Result<Outcome> {
    let manifest = load_manifest(args.manifest.as_deref())?;
    let report = verify_report(&args.dir, &manifest)?;
    match output {
        OutputFormat::Human => print!("{}", render_human(&report)),
        OutputFormat::Json => println!("{}", serde_json::to_string(&report)?),
    }
    Ok(if report.complete { Outcome::Clean } else { Outcome::Findings })
}

fn load_manifest(path: Option<&Path>) -> anyhow::Result<Manifest> {
    let manifest = match path {
        Some(path) => Manifest::load(path),
        None => Manifest::product(),
    };
    manifest.map_err(|error| anyhow::Error::new(UnusableInput(format!("{:#}", anyhow::Error::new(error)))))
}

/// Verifies `dir`; an unreadable directory is unusable input (exit 2), an incomplete payload a report.
pub fn verify_report(dir: &Path, manifest: &Manifest) -> anyhow::Result<VerifyReport> {
    match Payload::load(dir, manifest) {
        Ok(payload) => Ok(VerifyReport {
            dir: dir.to_path_buf(),
            complete: true,
            synthetic: payload.is_synthetic(),
            files: payload.files().count(),
            total_bytes: payload.total_bytes(),
            problems: Vec::new(),
        }),
        Err(PayloadError::Incomplete { problems, .. }) => Ok(VerifyReport {
            dir: dir.to_path_buf(),
            complete: false,
            synthetic: false,
            files: 0,
            total_bytes: 0,
            problems,
        }),
        Err(error @ PayloadError::UnreadableDir { .. }) => {
            Err(anyhow::Error::new(UnusableInput(format!("{:#}", anyhow::Error::new(error)))))
        }
    }
}

/// The human-readable report.
pub fn render_human(report: &VerifyReport) -> String {
    if report.complete {
        let synthetic = if report.synthetic { " (SYNTHETIC: for tests only)" } else { "" };
        return format!(
            "payload {} is complete: {} files, {}{synthetic}\n",
            report.dir.display(),
            report.files,
            human_size(report.total_bytes)
        );
    }
    let mut text = format!("payload {} has {} problem(s):\n", report.dir.display(), report.problems.len());
    for problem in &report.problems {
        text.push_str(&format!("  - {problem}\n"));
    }
    text
}

/// A size in KiB below one MiB, in MiB above, with one decimal.
fn human_size(bytes: u64) -> String {
    let kibibytes = bytes as f64 / 1024.0;
    if kibibytes < 1024.0 { format!("{kibibytes:.1} KiB") } else { format!("{:.1} MiB", kibibytes / 1024.0) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wmco_payload_manifest::{SyntheticScale, write_synthetic_payload};

    fn synthetic_payload() -> (Manifest, tempfile::TempDir) {
        let manifest = Manifest::product().expect("the product manifest is valid");
        let dir = tempfile::tempdir().expect("temp dir");
        let workspace_payload = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../payload");
        write_synthetic_payload(&manifest, &workspace_payload, dir.path(), SyntheticScale::Small).expect("written");
        (manifest, dir)
    }

    #[test]
    fn complete_synthetic_payload_is_clean_and_says_so() {
        let (manifest, dir) = synthetic_payload();
        let report = verify_report(dir.path(), &manifest).unwrap();
        assert!(report.complete && report.synthetic);
        assert_eq!(report.files, manifest.files().count());
        let text = render_human(&report);
        assert!(text.starts_with(&format!("payload {} is complete: {} files", dir.path().display(), report.files)));
        assert!(text.ends_with("(SYNTHETIC: for tests only)\n"), "{text}");
    }

    #[test]
    fn sizes_read_in_kib_or_mib() {
        assert_eq!(human_size(33_891), "33.1 KiB");
        assert_eq!(human_size(427 * 1024 * 1024), "427.0 MiB");
    }

    #[test]
    fn incomplete_payload_lists_every_problem_in_human_and_json_form() {
        let (manifest, dir) = synthetic_payload();
        std::fs::remove_file(dir.path().join("kube-node/kube-proxy.exe")).unwrap();
        std::fs::write(dir.path().join("extra.txt"), b"x").unwrap();
        let report = verify_report(dir.path(), &manifest).unwrap();
        assert_eq!(
            render_human(&report),
            format!(
                "payload {} has 2 problem(s):\n  - extra.txt: not declared in the manifest; remove it\n  - \
                 kube-node/kube-proxy.exe: missing (required by component kube-proxy)\n",
                dir.path().display()
            )
        );
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["complete"], false);
        assert_eq!(json["problems"][1]["kind"], "missing_required");
        assert_eq!(json["problems"][1]["path"], "kube-node/kube-proxy.exe");
    }

    #[test]
    fn unreadable_directory_and_manifest_are_unusable_input() {
        let manifest = Manifest::product().unwrap();
        let error = verify_report(Path::new("/nonexistent/wmco-payload"), &manifest).unwrap_err();
        assert!(error.is::<UnusableInput>(), "{error:#}");
        let error = load_manifest(Some(Path::new("/nonexistent/manifest.yaml"))).unwrap_err();
        assert!(
            error.to_string().starts_with("cannot read the payload manifest /nonexistent/manifest.yaml"),
            "{error}"
        );
        assert!(error.is::<UnusableInput>());
    }
}
