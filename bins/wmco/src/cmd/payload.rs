//! `wmco payload verify DIR`: checks a payload directory against the payload manifest (the compiled-in product
//! manifest, or `--manifest FILE`) and the directory's `sha256sum`, then proves every Go-built binary of a real
//! payload is what the manifest claims (PE headers, Go build information), and lists every problem. The report says
//! whether the payload is real or synthetic; a synthetic payload's binaries are never inspected.

use std::path::{Path, PathBuf};

use serde::Serialize;
use wmco_payload_manifest::{
    IdentityMismatch, Manifest, Payload, PayloadBinaryCheck, PayloadError, PayloadProblem, check_payload_binaries,
};

use crate::cli_support::{Outcome, OutputArgs, UnusableInput, print_stdout, render};

/// The `kind` of the document `wmco payload verify -o json|yaml` prints.
pub const KIND: &str = "PayloadVerification";

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
    /// `sha256sum`; in a real (not synthetic) payload, every Go-built binary a console PE32+ x86-64 image whose Go
    /// build information names the manifest's main package, module, version and build settings. Exits 0 when
    /// complete and every binary matches, 1 with the list of problems, 2 when the directory or manifest is
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
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The result of `wmco payload verify`, as printed with `-o json|yaml`.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// The payload directory.
    pub dir: PathBuf,
    /// Whether the payload is complete and consistent.
    pub complete: bool,
    /// Whether it carries the `SYNTHETIC` marker (test payloads only).
    pub synthetic: bool,
    /// `real` or `synthetic` once the files verified; `null` when they did not (the binaries were not inspected).
    /// Named `payloadKind` in the document, whose `kind` names the document.
    #[serde(rename = "payloadKind")]
    pub kind: Option<PayloadKind>,
    /// How many manifest files were verified.
    pub files: usize,
    /// Their total size in bytes.
    pub total_bytes: u64,
    /// Every problem found, sorted by file.
    pub problems: Vec<PayloadProblem>,
    /// How many Go-built binaries had their PE headers and Go build information checked (0 unless `real`).
    pub binaries_checked: usize,
    /// Every way a binary is not what the manifest claims, sorted by file.
    pub binary_mismatches: Vec<IdentityMismatch>,
}

/// Whether a verified payload is the real thing.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PayloadKind {
    /// Built binaries; each was checked against the manifest.
    Real,
    /// A synthetic payload for tests: pseudo-random binaries, not checked.
    Synthetic,
}

impl VerifyReport {
    /// Whether every file verified and every binary matched.
    pub fn is_clean(&self) -> bool {
        self.complete && self.binary_mismatches.is_empty()
    }
}

/// Runs the subcommand.
pub fn run(args: &PayloadArgs) -> anyhow::Result<Outcome> {
    match &args.command {
        PayloadCommand::Verify(verify_args) => verify(verify_args),
    }
}

fn verify(args: &VerifyArgs) -> anyhow::Result<Outcome> {
    let manifest = load_manifest(args.manifest.as_deref())?;
    let report = verify_report(&args.dir, &manifest)?;
    print_stdout(&render(args.output.format, KIND, &report, || render_human(&report))?)?;
    Ok(if report.is_clean() { Outcome::Clean } else { Outcome::Findings })
}

fn load_manifest(path: Option<&Path>) -> anyhow::Result<Manifest> {
    let manifest = match path {
        Some(path) => Manifest::load(path),
        None => Manifest::product(),
    };
    manifest.map_err(|error| anyhow::Error::new(UnusableInput(format!("{:#}", anyhow::Error::new(error)))))
}

/// Verifies `dir`, then the binaries of a real payload; an unreadable directory is unusable input (exit 2), an
/// incomplete payload or a mismatching binary a report.
pub fn verify_report(dir: &Path, manifest: &Manifest) -> anyhow::Result<VerifyReport> {
    match Payload::load(dir, manifest) {
        Ok(payload) => {
            let (kind, binaries_checked, binary_mismatches) = match check_payload_binaries(&payload, manifest) {
                PayloadBinaryCheck::Synthetic => (PayloadKind::Synthetic, 0, Vec::new()),
                PayloadBinaryCheck::Real { checked, mismatches } => (PayloadKind::Real, checked, mismatches),
            };
            Ok(VerifyReport {
                dir: dir.to_path_buf(),
                complete: true,
                synthetic: payload.is_synthetic(),
                kind: Some(kind),
                files: payload.files().count(),
                total_bytes: payload.total_bytes(),
                problems: Vec::new(),
                binaries_checked,
                binary_mismatches,
            })
        }
        Err(PayloadError::Incomplete { problems, .. }) => Ok(VerifyReport {
            dir: dir.to_path_buf(),
            complete: false,
            synthetic: false,
            kind: None,
            files: 0,
            total_bytes: 0,
            problems,
            binaries_checked: 0,
            binary_mismatches: Vec::new(),
        }),
        Err(error @ PayloadError::UnreadableDir { .. }) => {
            Err(anyhow::Error::new(UnusableInput(format!("{:#}", anyhow::Error::new(error)))))
        }
    }
}

/// The human-readable report.
pub fn render_human(report: &VerifyReport) -> String {
    if report.complete {
        let kind = match report.kind {
            Some(PayloadKind::Synthetic) => " (SYNTHETIC: for tests only)".to_owned(),
            Some(PayloadKind::Real) => format!(" (real: {} binaries checked)", report.binaries_checked),
            None => String::new(),
        };
        let mut text = format!(
            "payload {} is complete: {} files, {}{kind}\n",
            report.dir.display(),
            report.files,
            human_size(report.total_bytes)
        );
        if !report.binary_mismatches.is_empty() {
            text.push_str(&format!("but {} binary mismatch(es) with the manifest:\n", report.binary_mismatches.len()));
            for mismatch in &report.binary_mismatches {
                text.push_str(&format!("  - {mismatch}\n"));
            }
        }
        return text;
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
        assert!(report.complete && report.synthetic && report.is_clean());
        assert_eq!((report.kind, report.binaries_checked), (Some(PayloadKind::Synthetic), 0));
        assert_eq!(report.files, manifest.files().count());
        assert_eq!(serde_json::to_value(&report).unwrap()["payloadKind"], "synthetic");
        let text = render_human(&report);
        assert!(text.starts_with(&format!("payload {} is complete: {} files", dir.path().display(), report.files)));
        assert!(text.ends_with("(SYNTHETIC: for tests only)\n"), "{text}");
    }

    const TOOL_MANIFEST: &str = r#"
schema: wmco.payload/v1
components:
  - name: tool
    version: v1.0.0
    source: { go: { module: example.com/tool, version: v1.0.0, build: tool } }
    required: true
    files:
      - path: bin/tool.exe
        destination: 'C:\k\tool.exe'
        typical_size: 1KiB
        package: ./cmd/tool
        version_check: { args: [--version], expect: v1.0.0 }
"#;

    /// A real (unmarked) payload whose one binary is `content`.
    fn real_payload(content: &[u8]) -> (Manifest, tempfile::TempDir) {
        let manifest = Manifest::from_yaml(TOOL_MANIFEST, "test").expect("valid manifest");
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        std::fs::write(dir.path().join("bin/tool.exe"), content).unwrap();
        let digest = wmco_payload_manifest::Sha256Digest::of_bytes(content);
        std::fs::write(dir.path().join("sha256sum"), format!("{digest}  bin/tool.exe\n")).unwrap();
        (manifest, dir)
    }

    #[test]
    fn real_payload_binaries_are_checked_and_every_mismatch_is_listed() {
        let (manifest, dir) = real_payload(b"#!/bin/sh\necho not a Windows binary\n");
        let report = verify_report(dir.path(), &manifest).unwrap();
        assert!(report.complete && !report.synthetic && !report.is_clean());
        assert_eq!((report.kind, report.binaries_checked), (Some(PayloadKind::Real), 1));
        let text = render_human(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            format!("payload {} is complete: 1 files, 0.0 KiB (real: 1 binaries checked)", dir.path().display())
        );
        assert_eq!(lines[1], "but 2 binary mismatch(es) with the manifest:");
        assert!(lines[2].starts_with("  - bin/tool.exe: PE image: expected a PE32+ image, found not a PE image"));
        assert!(lines[3].starts_with("  - bin/tool.exe: Go build information: expected Go build information"));
        assert_eq!(lines.len(), 4, "{text}");
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["payloadKind"], "real");
        assert_eq!(json["binariesChecked"], 1);
        assert_eq!(json["binaryMismatches"][0]["path"], "bin/tool.exe");
        assert_eq!(json["binaryMismatches"][0]["check"], "pe_image");
        assert_eq!(json["binaryMismatches"][1]["check"], "go_build_info");
        assert!(json["binaryMismatches"][1]["found"].as_str().unwrap().starts_with("no Go build information"));
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
        assert_eq!(json["payloadKind"], serde_json::Value::Null);
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
