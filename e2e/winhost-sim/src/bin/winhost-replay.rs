//! `winhost-replay TRANSCRIPT.jsonl`: replays a command transcript recorded by `wmco run --record-transcripts` on a
//! fresh simulated host ([`winhost_sim::replay`]) and prints one line per operation (`same`, `differs`, `unknown
//! to the simulator`, `no recorded result`, `applied`, `skipped`) with what differed, then a summary. `-o json` or
//! `-o yaml` prints one document (`apiVersion: cli.wmco-rs.io/v1alpha1`, `kind: TranscriptReplay`) instead.
//!
//! Exit 0 when no command met anything unknown to the simulator (commands may differ: uploads are not replayed),
//! 1 when some did, 2 when the transcript is unreadable or the command line is unusable.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use serde::Serialize;
use winhost_sim::replay::{Replay, Verdict, replay_file};

/// Replays a `wmco run --record-transcripts` transcript against a simulated Windows host.
#[derive(Debug, Parser)]
#[command(name = "winhost-replay", version)]
struct Cli {
    /// The transcript: one host's `<user>_<address>_<port>.jsonl`.
    transcript: PathBuf,
    /// Output format: `human` for people; `json` or `yaml` for programs (one document with `apiVersion` and `kind`).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Human, value_name = "FORMAT")]
    output: Format,
    /// Print only the operations that were not the same (and the summary), in human output.
    #[arg(long)]
    differences_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Human,
    Json,
    Yaml,
}

/// The `-o json|yaml` document.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    api_version: &'static str,
    kind: &'static str,
    transcript: &'a PathBuf,
    summary: String,
    #[serde(flatten)]
    replay: &'a Replay,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let replay = match replay_file(&cli.transcript) {
        Ok(replay) => replay,
        Err(error) => {
            eprintln!("winhost-replay: {error}");
            return ExitCode::from(2);
        }
    };
    let printed = match cli.output {
        Format::Human => Ok(human(&cli, &replay)),
        Format::Json | Format::Yaml => {
            let document = Document {
                api_version: "cli.wmco-rs.io/v1alpha1",
                kind: "TranscriptReplay",
                transcript: &cli.transcript,
                summary: replay.summary(),
                replay: &replay,
            };
            if cli.output == Format::Json {
                serde_json::to_string_pretty(&document).map(|text| format!("{text}\n")).map_err(|e| e.to_string())
            } else {
                serde_saphyr::to_string(&document).map_err(|error| error.to_string())
            }
        }
    };
    match printed {
        Ok(text) => print!("{text}"),
        Err(error) => {
            eprintln!("winhost-replay: cannot write the report: {error}");
            return ExitCode::from(2);
        }
    }
    if replay.unknown() == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// The report for people: where the identity came from, a line per operation with its differences, the summary.
fn human(cli: &Cli, replay: &Replay) -> String {
    let identity = &replay.identity;
    let source = match identity.source {
        Some(entry) => format!("from entry {entry}"),
        None => "defaults: the transcript has no identity command".to_owned(),
    };
    let mut text = format!(
        "transcript {}: simulated host {} ({}, node IP {}, build {}; {source})\n",
        cli.transcript.display(),
        identity.hostname,
        identity.fqdn,
        identity.node_ip,
        identity.build
    );
    for step in &replay.steps {
        if cli.differences_only && matches!(step.verdict, Verdict::Same | Verdict::Applied | Verdict::Skipped) {
            continue;
        }
        let verdict = step.verdict.to_string();
        text.push_str(&format!("{:>5} {:<13} {verdict:<25} {}\n", step.entry, step.operation, step.subject));
        for difference in &step.differences {
            text.push_str(&format!("{:>20}{difference}\n", ""));
        }
    }
    text.push_str(&format!("summary: {}\n", replay.summary()));
    text
}
