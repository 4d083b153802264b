//! `wmco csr check --csr FILE --world FILE`: decides one CertificateSigningRequest (as `kubectl get csr NAME -o yaml`
//! prints it) against a serialized World, offline, and prints the verdict, the deciding rule and the reason.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use wmco_csr_approver::{CsrFacts, CsrManifest, Verdict, VerdictReport, World, decide};

use crate::cli_support::{Outcome, OutputArgs, UnusableInput, parse_document, print_stdout, render};

/// The `kind` of the document `wmco csr check -o json|yaml` prints.
pub const KIND: &str = "CsrCheck";

/// Arguments of `wmco csr`.
#[derive(Debug, clap::Args)]
pub struct CsrArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: CsrCommand,
}

/// The `wmco csr` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CsrCommand {
    /// Decide one CSR against a World file, as the operator would (rules A1-F4, docs/csr-approval.md).
    Check(CheckArgs),
}

/// Arguments of `wmco csr check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The CSR manifest, YAML or JSON, exactly as `kubectl get csr NAME -o yaml` (or `-o json`) prints it.
    #[arg(long, value_name = "FILE")]
    pub csr: PathBuf,
    /// The World (instances, Nodes, other CSRs, networks, time), YAML or JSON; schema in docs/csr-approval.md.
    #[arg(long, value_name = "FILE")]
    pub world: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The result of `wmco csr check`, as printed with `-o json|yaml`: the CSR's name and the verdict.
#[derive(Debug, Serialize)]
struct CheckReport<'a> {
    /// The CSR's `metadata.name`.
    name: &'a str,
    #[serde(flatten)]
    verdict: VerdictReport,
}

/// Runs a `wmco csr` subcommand. A verdict that was reached exits 0, whatever it is.
pub fn run(args: &CsrArgs) -> anyhow::Result<Outcome> {
    match &args.command {
        CsrCommand::Check(check_args) => check(check_args),
    }
}

fn check(args: &CheckArgs) -> anyhow::Result<Outcome> {
    let manifest: CsrManifest =
        read_document(&args.csr, "CSR manifest", "as `kubectl get csr NAME -o yaml` prints it")?;
    let facts = CsrFacts::from_manifest(&manifest)
        .map_err(|error| UnusableInput(format!("{}: {error}", args.csr.display())))?;
    let world: World = read_document(&args.world, "World", "schema in docs/csr-approval.md")?;
    let verdict = decide(&facts, &world);
    let report = CheckReport { name: &facts.name, verdict: verdict.report() };
    print_stdout(&render(args.output.format, KIND, &report, || render_human(&facts.name, &verdict))?)?;
    Ok(Outcome::Clean)
}

/// Reads `path` as JSON when it ends in `.json` or starts with `{`, as YAML otherwise; errors name the file, what
/// it should hold (`what`) and where that is described (`hint`).
fn read_document<T: DeserializeOwned>(path: &Path, what: &str, hint: &str) -> Result<T, UnusableInput> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| UnusableInput(format!("cannot read {what} {}: {error}", path.display())))?;
    parse_document(&text, path, what, hint)
}

/// One line: `NAME: VERDICT [RULE]: REASON`.
fn render_human(csr_name: &str, verdict: &Verdict) -> String {
    match verdict.rule() {
        Some(rule) => format!("{csr_name}: {} {rule}: {}\n", verdict.kind(), verdict.reason()),
        None => format!("{csr_name}: {}: {}\n", verdict.kind(), verdict.reason()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli_support::OutputFormat;
    use wmco_csr_approver::RuleId;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/csr-approver/tests/fixtures").join(name)
    }

    fn check_args(csr: PathBuf, world: PathBuf) -> CsrArgs {
        CsrArgs {
            command: CsrCommand::Check(CheckArgs { csr, world, output: OutputArgs { format: OutputFormat::Json } }),
        }
    }

    #[test]
    fn documented_example_is_decided_and_exits_0() {
        let args = check_args(fixture("csr-example.yaml"), fixture("world-example.yaml"));
        assert_eq!(run(&args).unwrap(), Outcome::Clean);
    }

    #[test]
    fn json_world_and_csr_are_read() {
        let directory = tempfile::tempdir().unwrap();
        let csr: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(fixture("csr-example.yaml")).unwrap()).unwrap();
        let world: serde_json::Value =
            serde_saphyr::from_str(&std::fs::read_to_string(fixture("world-example.yaml")).unwrap()).unwrap();
        let (csr_path, world_path) = (directory.path().join("csr.json"), directory.path().join("world.json"));
        std::fs::write(&csr_path, csr.to_string()).unwrap();
        std::fs::write(&world_path, world.to_string()).unwrap();
        let manifest: CsrManifest = read_document(&csr_path, "CSR", "test").unwrap();
        let world: World = read_document(&world_path, "World", "test").unwrap();
        assert_eq!(decide(&CsrFacts::from_manifest(&manifest).unwrap(), &world), Verdict::Approve);
    }

    #[test]
    fn unreadable_inputs_are_unusable_input() {
        let missing = check_args(fixture("no-such-file.yaml"), fixture("world-example.yaml"));
        let error = run(&missing).unwrap_err();
        assert!(error.is::<UnusableInput>());
        assert!(error.to_string().contains("cannot read CSR manifest"), "{error}");

        let world_as_csr = check_args(fixture("world-example.yaml"), fixture("world-example.yaml"));
        let error = run(&world_as_csr).unwrap_err();
        assert!(error.is::<UnusableInput>());
        assert!(
            error
                .to_string()
                .contains("is not a valid CSR manifest (YAML, as `kubectl get csr NAME -o yaml` prints it)"),
            "{error}"
        );

        let csr_as_world = check_args(fixture("csr-example.yaml"), fixture("csr-example.yaml"));
        let error = run(&csr_as_world).unwrap_err();
        assert!(error.is::<UnusableInput>());
        assert!(error.to_string().contains("is not a valid World (YAML, schema in docs/csr-approval.md)"), "{error}");
    }

    #[test]
    fn human_lines_name_csr_verdict_rule_and_reason() {
        let deny = Verdict::Deny { rule: RuleId::B2, reason: "signature check failed".into() };
        assert_eq!(render_human("csr-1", &deny), "csr-1: deny B2: signature check failed\n");
        assert_eq!(render_human("csr-1", &Verdict::Approve), "csr-1: approve: every rule A1-F4 passed\n");
    }
}
