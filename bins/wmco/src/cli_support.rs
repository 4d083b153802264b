//! What every subcommand shares: the output and log formats, the `-o/--output` and cluster-connection flags, the
//! versioned document every JSON or YAML result is wrapped in, the outcome of a command, the error that means
//! "unusable input" (exit 2), logging setup, and the mapping of results to exit codes (design §7).

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::ValueEnum;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing_subscriber::EnvFilter;

use crate::redacting_log::Redacting;

/// The `apiVersion` of every document `wmco` prints with `-o json` or `-o yaml` (except Kubernetes objects it
/// prints as they are: the CRD and a generated MachineSet). A breaking change of any document moves it.
pub const API_VERSION: &str = "cli.wmco-rs.io/v1alpha1";

/// How a subcommand writes its result to standard output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Lines meant for people.
    #[default]
    Human,
    /// One JSON document meant for programs, with `apiVersion` and `kind`.
    Json,
    /// The same document as YAML.
    Yaml,
}

/// The `-o/--output` flag, flattened into every subcommand that prints data.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct OutputArgs {
    /// Output format: `human` for people; `json` or `yaml` for programs (one document with `apiVersion` and `kind`,
    /// keys in camelCase).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Human, value_name = "FORMAT")]
    pub format: OutputFormat,
}

/// A result as printed with `-o json` or `-o yaml`: `apiVersion`, `kind`, then the fields of `body`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Document<'a, T: Serialize> {
    /// Always [`API_VERSION`].
    pub api_version: &'static str,
    /// What the document holds, one per subcommand (`Version`, `SshCheck`, …).
    pub kind: &'static str,
    /// The result itself; its fields follow `kind`.
    #[serde(flatten)]
    pub body: &'a T,
}

/// `value` as a YAML document with `-o yaml`, else as one JSON document on one line; each ends in a line break.
pub fn to_machine_text<T: Serialize>(format: OutputFormat, value: &T) -> anyhow::Result<String> {
    match format {
        OutputFormat::Yaml => {
            let yaml = serde_saphyr::to_string(value).context("cannot write the result as YAML")?;
            Ok(if yaml.ends_with('\n') { yaml } else { yaml + "\n" })
        }
        OutputFormat::Json | OutputFormat::Human => Ok(format!("{}\n", serde_json::to_string(value)?)),
    }
}

/// The text a subcommand prints: `human()` for `-o human`, else `body` wrapped in a [`Document`] of `kind`.
pub fn render<T: Serialize>(
    format: OutputFormat,
    kind: &'static str,
    body: &T,
    human: impl FnOnce() -> String,
) -> anyhow::Result<String> {
    match format {
        OutputFormat::Human => Ok(human()),
        OutputFormat::Json | OutputFormat::Yaml => {
            to_machine_text(format, &Document { api_version: API_VERSION, kind, body })
        }
    }
}

/// Writes `text` to standard output (through `print!`, so tests capture it).
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    print!("{text}");
    std::io::stdout().flush().context("cannot write to standard output")
}

/// Parses `text`, read from `source`, as JSON when `source` ends in `.json` or the text starts with `{`, as YAML
/// otherwise. A failure is unusable input naming the file, what it should hold (`what`), where that is described
/// (`hint`) and the parser's complaint.
pub fn parse_document<T: DeserializeOwned>(
    text: &str,
    source: &Path,
    what: &str,
    hint: &str,
) -> Result<T, UnusableInput> {
    let is_json = source.extension().is_some_and(|extension| extension == "json") || text.trim_start().starts_with('{');
    let parsed = if is_json {
        serde_json::from_str(text).map_err(|error| error.to_string())
    } else {
        serde_saphyr::from_str(text).map_err(|error| error.to_string())
    };
    parsed.map_err(|problem| {
        let format = if is_json { "JSON" } else { "YAML" };
        // The YAML parser starts its messages with its own `error: `; `finish` already prints one.
        let problem = problem.strip_prefix("error: ").unwrap_or(&problem);
        UnusableInput(format!("{} is not a valid {what} ({format}, {hint}): {problem}", source.display()))
    })
}

/// `--kubeconfig` and `--context`, flattened into every subcommand that talks to a cluster.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct KubeArgs {
    /// The kubeconfig file to use (default: `KUBECONFIG`, `~/.kube/config`, or the in-cluster configuration).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

impl KubeArgs {
    /// The client configuration these flags select. An unreadable kubeconfig or an unknown context is unusable
    /// input (exit 2), naming the file or context.
    pub async fn config(&self) -> anyhow::Result<kube::Config> {
        let options = KubeConfigOptions { context: self.context.clone(), ..KubeConfigOptions::default() };
        let unusable =
            |what: String, error: &dyn fmt::Display| anyhow::Error::new(UnusableInput(format!("{what}: {error}")));
        match (&self.kubeconfig, &self.context) {
            (Some(path), _) => {
                let kubeconfig = Kubeconfig::read_from(path)
                    .map_err(|error| unusable(format!("cannot read --kubeconfig {}", path.display()), &error))?;
                kube::Config::from_custom_kubeconfig(kubeconfig, &options).await.map_err(|error| {
                    unusable(format!("--kubeconfig {}{}", path.display(), context_note(&self.context)), &error)
                })
            }
            (None, Some(_)) => kube::Config::from_kubeconfig(&options).await.map_err(|error| {
                unusable(
                    format!("the kubeconfig (KUBECONFIG or ~/.kube/config){}", context_note(&self.context)),
                    &error,
                )
            }),
            (None, None) => kube::Config::infer().await.map_err(|error| {
                unusable(
                    "cannot load the kubeconfig (KUBECONFIG or ~/.kube/config) or the in-cluster configuration; pass \
                     --kubeconfig FILE"
                        .to_owned(),
                    &error,
                )
            }),
        }
    }
}

/// How long connecting to the API server may take before the cluster counts as unreachable.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);
/// How long one answer of the API server may take.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The namespace the operator, its `WindowsInstance` records and their Events live in by default.
pub const OPERATOR_NAMESPACE: &str = "openshift-windows-machine-config-operator";

/// `--kubeconfig`, `--context` and `-n/--namespace`: the cluster and the operator namespace of the subcommands that
/// read the operator's records.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    #[command(flatten)]
    pub kube: KubeArgs,
    /// The operator namespace: where the `WindowsInstance` records, their Events and the operator's pods are.
    #[arg(short = 'n', long, default_value = OPERATOR_NAMESPACE, value_name = "NAMESPACE")]
    pub namespace: String,
}

impl ClusterArgs {
    /// A client for the cluster these flags select, with bounded connect and read times.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        let mut config = self.kube.config().await?;
        config.connect_timeout = Some(CONNECT_TIMEOUT);
        config.read_timeout = Some(READ_TIMEOUT);
        let cluster = config.cluster_url.to_string();
        kube::Client::try_from(config).with_context(|| format!("cannot build a client for the cluster at {cluster}"))
    }
}

/// ` with --context NAME`, or nothing.
fn context_note(context: &Option<String>) -> String {
    context.as_deref().map(|name| format!(" with --context {name}")).unwrap_or_default()
}

/// How log lines are written to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// What a subcommand found, when it could run at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything checked is fine (exit 0).
    Clean,
    /// The command ran and found problems, such as a bad entry or a failed check (exit 1).
    Findings,
}

impl Outcome {
    /// The process exit code of this outcome.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Clean => 0,
            Outcome::Findings => 1,
        }
    }
}

/// An input the command cannot use at all (an unreadable file, a malformed argument): exit code 2.
///
/// Subcommands return it inside `anyhow::Error`; any other error means the command's check failed (exit 1).
#[derive(Debug)]
pub struct UnusableInput(pub String);

impl fmt::Display for UnusableInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnusableInput {}

/// Sets up the tracing subscriber on standard error, filtered by `RUST_LOG` (default `info`), every line redacted
/// ([`Redacting`]).
pub fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(Redacting(std::io::stderr));
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// Maps a subcommand's result to the process exit code, printing an error with its causes to standard error,
/// redacted.
pub fn finish(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(error) => {
            eprintln!("{}", error_line(&error));
            ExitCode::from(exit_code_of_error(&error))
        }
    }
}

/// The line a failed command prints: `error: ` and the error with its causes, redacted.
fn error_line(error: &anyhow::Error) -> String {
    wmco_redact::redact(&format!("error: {error:#}"))
}

/// The exit code of a failed command: 2 when unusable input is anywhere in the error chain, else 1.
pub(crate) fn exit_code_of_error(error: &anyhow::Error) -> u8 {
    if error.chain().any(|cause| cause.is::<UnusableInput>()) { 2 } else { 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unusable_input_exits_2_even_when_wrapped_in_context() {
        let error = anyhow::Error::new(UnusableInput("cannot read world.yaml".into())).context("csr check");
        assert_eq!(exit_code_of_error(&error), 2);
    }

    #[test]
    fn an_error_is_printed_without_the_credentials_it_quotes() {
        let error = anyhow::anyhow!("proxy http://wmco:pr0xy-s3cret@proxy.example:3129 refused").context("wmco run");
        assert_eq!(error_line(&error), "error: wmco run: proxy http://[REDACTED]@proxy.example:3129 refused");
    }

    #[test]
    fn other_errors_exit_1() {
        assert_eq!(exit_code_of_error(&anyhow::anyhow!("host 10.0.0.1 unreachable")), 1);
    }
}
