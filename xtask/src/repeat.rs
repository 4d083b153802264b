//! `cargo xtask test --repeat N`: the test stage run N times, each run's libtest output read back, and a table of
//! every test that was not green in every run.
//!
//! [`RunParser`] reads one `cargo test` run line by line: cargo announces each test binary (`Running <source>
//! (<path>)`, `Doc-tests <crate>`) before libtest prints `test <name> ... ok|FAILED|ignored` for each test and a
//! closing `test result:` line. A binary that never printed its `test result:` line crashed (a signal, an abort, a
//! harness error) and counts as a failed entry of its own. [`Repetition`] adds the runs up and prints the table.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The name under which a binary that crashed before printing its results appears in the table.
pub const CRASHED_BINARY: &str = "(binary exited before printing its test result)";

/// What one test did in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `ok`.
    Passed,
    /// `FAILED`, or the binary crashed.
    Failed,
    /// `ignored`.
    Ignored,
}

/// A test: the binary that holds it and its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TestId {
    /// The binary as cargo announced it, with the hash of the file name dropped (`tests/byoh.rs (byoh)`,
    /// `unittests src/lib.rs (wmco_operator)`, `Doc-tests wmco_operator`).
    pub binary: String,
    /// The test's name as libtest printed it, or [`CRASHED_BINARY`].
    pub name: String,
}

/// One run's results.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// Every test the run reported, plus a [`CRASHED_BINARY`] entry per binary that crashed.
    pub tests: BTreeMap<TestId, Outcome>,
    /// The binaries that crashed before printing their `test result:` line.
    pub crashed: Vec<String>,
}

impl RunOutcome {
    fn count(&self, outcome: Outcome) -> usize {
        self.tests.values().filter(|seen| **seen == outcome).count()
    }

    /// Tests passed, failed (crashed binaries counted once each) and ignored.
    pub fn totals(&self) -> (usize, usize, usize) {
        (self.count(Outcome::Passed), self.count(Outcome::Failed), self.count(Outcome::Ignored))
    }
}

/// Reads one `cargo test` run's merged stdout and stderr, line by line.
#[derive(Debug, Default)]
pub struct RunParser {
    outcome: RunOutcome,
    /// The binary whose tests are being printed, and whether its `test result:` line came.
    current: Option<(String, bool)>,
    /// A test whose line (`test name ... `) was cut by other output before its result (single-threaded runs print
    /// the name first).
    pending: Option<String>,
}

impl RunParser {
    /// Reads one line of output.
    pub fn feed(&mut self, line: &str) {
        let trimmed = line.trim();
        if let Some(binary) = announced_binary(trimmed) {
            self.close_binary();
            self.current = Some((binary, false));
            return;
        }
        let Some((binary, finished)) = self.current.as_mut() else { return };
        if trimmed.starts_with("test result: ") {
            *finished = true;
            self.pending = None;
            return;
        }
        let binary = binary.clone();
        if let Some(rest) = trimmed.strip_prefix("test ")
            && let Some((name, result)) = rest.split_once(" ...")
        {
            match parse_result(result) {
                Some(outcome) => self.record(binary, name.to_owned(), outcome),
                None => self.pending = Some(name.to_owned()),
            }
            return;
        }
        if let Some(name) = self.pending.clone()
            && let Some(outcome) = parse_result(trimmed)
        {
            self.pending = None;
            self.record(binary, name, outcome);
        }
    }

    /// The run's results; a binary still waiting for its `test result:` line crashed.
    pub fn finish(mut self) -> RunOutcome {
        self.close_binary();
        self.outcome
    }

    /// Ends the binary being read: without its `test result:` line it crashed.
    pub fn end_of_binary(&mut self) {
        self.close_binary();
    }

    fn record(&mut self, binary: String, name: String, outcome: Outcome) {
        self.outcome.tests.insert(TestId { binary, name }, outcome);
    }

    fn close_binary(&mut self) {
        self.pending = None;
        if let Some((binary, finished)) = self.current.take()
            && !finished
        {
            self.record(binary.clone(), CRASHED_BINARY.to_owned(), Outcome::Failed);
            self.outcome.crashed.push(binary);
        }
    }
}

/// The binary a cargo line announces: `Running <source> (<path>)` or `Doc-tests <crate>`.
fn announced_binary(line: &str) -> Option<String> {
    if let Some(krate) = line.strip_prefix("Doc-tests ") {
        return Some(format!("Doc-tests {}", krate.trim()));
    }
    let announced = line.strip_prefix("Running ")?;
    let Some((source, path)) = announced.rsplit_once(" (") else { return Some(announced.to_owned()) };
    let file = path.trim_end_matches(')').rsplit('/').next().unwrap_or(path);
    Some(format!("{source} ({})", without_hash(file)))
}

/// `byoh-e10139405273bbd7` → `byoh`: cargo's metadata hash changes with the build, not with the test.
fn without_hash(file: &str) -> &str {
    match file.rsplit_once('-') {
        Some((stem, hash)) if !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()) => stem,
        _ => file,
    }
}

/// `ok`, `FAILED`, `ignored` (also `ignored, <reason>`) at the start of a result text.
fn parse_result(result: &str) -> Option<Outcome> {
    let word = result.trim_start().split([' ', ',']).next()?;
    match word {
        "ok" => Some(Outcome::Passed),
        "FAILED" => Some(Outcome::Failed),
        "ignored" => Some(Outcome::Ignored),
        _ => None,
    }
}

/// The runs added up.
#[derive(Debug, Default)]
pub struct Repetition {
    /// Per run: how it ended (in words), whether every job exited 0, and its tests.
    runs: Vec<(String, bool, RunOutcome)>,
}

/// One test that was not green in every run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotGreen {
    /// The test.
    pub id: TestId,
    /// Runs in which it passed.
    pub passes: usize,
    /// Runs in which it failed (or its binary crashed).
    pub failures: usize,
    /// Runs that did not report it at all.
    pub missing: usize,
}

impl Repetition {
    /// Adds one run of the test pool: whether every job exited 0, and the parsed output.
    pub fn add_pool(&mut self, success: bool, outcome: RunOutcome) {
        let ended = if success { "every job exited 0" } else { "a job failed" };
        self.add_raw(ended.to_owned(), success, outcome);
    }

    fn add_raw(&mut self, ended: String, success: bool, outcome: RunOutcome) {
        self.runs.push((ended, success, outcome));
    }

    /// Every test that failed in some run, or was missing from a run that reported it elsewhere (its binary
    /// crashed earlier), sorted by binary and name. A test ignored in every run is not listed.
    pub fn not_green(&self) -> Vec<NotGreen> {
        let mut ids: Vec<&TestId> = self.runs.iter().flat_map(|(_, _, outcome)| outcome.tests.keys()).collect();
        ids.sort();
        ids.dedup();
        ids.into_iter()
            .filter_map(|id| {
                let seen: Vec<Outcome> =
                    self.runs.iter().filter_map(|(_, _, outcome)| outcome.tests.get(id).copied()).collect();
                let passes = seen.iter().filter(|outcome| **outcome == Outcome::Passed).count();
                let failures = seen.iter().filter(|outcome| **outcome == Outcome::Failed).count();
                let missing = self.runs.len() - seen.len();
                let green = failures == 0 && missing == 0;
                (!green).then(|| NotGreen { id: id.clone(), passes, failures, missing })
            })
            .collect()
    }

    /// Whether every run exited successfully and no test failed or crashed in any of them.
    pub fn all_green(&self) -> bool {
        self.runs.iter().all(|(_, success, _)| *success) && self.not_green().is_empty()
    }

    /// The per-run lines, the table of tests not green every time, and the totals.
    pub fn report(&self) -> String {
        let runs = self.runs.len();
        let mut text = String::new();
        for (index, (ended, _, outcome)) in self.runs.iter().enumerate() {
            let _ = writeln!(
                text,
                "    run {}/{runs}: {} passed, {} failed, {} ignored, {} binaries crashed; {ended}",
                index + 1,
                outcome.count(Outcome::Passed),
                outcome.count(Outcome::Failed) - outcome.crashed.len(),
                outcome.count(Outcome::Ignored),
                outcome.crashed.len(),
            );
        }
        let not_green = self.not_green();
        let failed_runs = self.runs.iter().filter(|(_, success, _)| !success).count();
        if not_green.is_empty() && failed_runs > 0 {
            let _ = writeln!(
                text,
                "==> every test that reported was green, but a job failed in {failed_runs} of {runs} runs \
                 (a binary that did not start, or the sandbox: see its output above)"
            );
        } else if not_green.is_empty() {
            let _ = writeln!(text, "==> every test was green in all {runs} runs");
        } else {
            let _ = writeln!(text, "==> tests not green in every one of {runs} runs:");
            let rows: Vec<[String; 4]> = not_green
                .iter()
                .map(|row| {
                    let detail =
                        if row.missing > 0 { format!("not reported in {}", row.missing) } else { String::new() };
                    [row.id.name.clone(), row.id.binary.clone(), format!("{}/{runs}", row.passes), detail]
                })
                .collect();
            let header = ["test", "binary", "passes", ""].map(str::to_owned);
            let widths: Vec<usize> = (0..4)
                .map(|column| rows.iter().chain([&header]).map(|row| row[column].chars().count()).max().unwrap_or(0))
                .collect();
            for row in [&header].into_iter().chain(&rows) {
                let line = format!(
                    "    {:<w0$}  {:<w1$}  {:>w2$}  {}",
                    row[0],
                    row[1],
                    row[2],
                    row[3],
                    w0 = widths[0],
                    w1 = widths[1],
                    w2 = widths[2]
                );
                let _ = writeln!(text, "{}", line.trim_end());
            }
        }
        let distinct = {
            let mut ids: Vec<&TestId> = self.runs.iter().flat_map(|(_, _, outcome)| outcome.tests.keys()).collect();
            ids.sort();
            ids.dedup();
            ids.iter().filter(|id| id.name != CRASHED_BINARY).count()
        };
        let failures: usize = not_green.iter().map(|row| row.failures).sum();
        let _ = writeln!(
            text,
            "==> totals: {runs} runs, {distinct} tests, {} not green every time ({failures} failures in all runs), \
             {failed_runs} runs with a non-zero exit",
            not_green.len(),
        );
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from `cargo test` (paths shortened): a passing library, a binary with a failing test and an
    /// ignored one, an integration test binary that was killed mid-run, and doc tests.
    const RUN: &str = "\
   Compiling wmco-csr-approver v0.1.0 (/work/main/crates/csr-approver)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 9.71s
     Running unittests src/lib.rs (/root/.cache/wmco-rs/target/debug/deps/wmco_csr_approver-3f0a1b2c3d4e5f60)

running 2 tests
test rules::tests::a1_requires_the_node_prefix ... ok
test rules::tests::b2_rejects_extra_usages ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running unittests src/lib.rs (/root/.cache/wmco-rs/target/debug/deps/wmco_operator-0a1b2c3d4e5f6789)

running 3 tests
test files::tests::refresh_mints_a_token ... ok
test instances::tests::a_host_is_configured ... FAILED
test machines::tests::slow_one ... ignored, needs a control plane

failures:

---- instances::tests::a_host_is_configured stdout ----
thread 'instances::tests::a_host_is_configured' panicked at crates/operator/src/instances/tests.rs:10:5:
test instances::tests::not_a_result_line ... because this is panic text
failures:
    instances::tests::a_host_is_configured

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.20s

error: test failed, to rerun pass `-p wmco-operator --lib`
     Running tests/byoh.rs (/root/.cache/wmco-rs/target/debug/deps/byoh-e10139405273bbd7)

running 2 tests
test scenario_1_hosts_join ... ok
error: test failed, to rerun pass `-p wmco-sandbox --test byoh`

Caused by:
  process didn't exit successfully: `/root/.cache/wmco-rs/target/debug/deps/byoh-e10139405273bbd7` (signal: 6, SIGABRT: process abort signal)
   Doc-tests wmco_csr_approver

running 1 test
test crates/csr-approver/src/lib.rs - Approver (line 12) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.50s

error: 2 targets failed:
    `-p wmco-operator --lib`
    `-p wmco-sandbox --test byoh`
";

    /// Parses the whole text of one run (as [`RunParser::feed`] line by line).
    fn parse_run(text: &str) -> RunOutcome {
        let mut parser = RunParser::default();
        text.lines().for_each(|line| parser.feed(line));
        parser.finish()
    }

    fn id(binary: &str, name: &str) -> TestId {
        TestId { binary: binary.to_owned(), name: name.to_owned() }
    }

    #[test]
    fn a_run_is_read_per_binary_with_failures_ignores_and_a_crash() {
        let outcome = parse_run(RUN);
        let operator = "unittests src/lib.rs (wmco_operator)";
        let byoh = "tests/byoh.rs (byoh)";
        assert_eq!(
            outcome.tests,
            BTreeMap::from([
                (
                    id("Doc-tests wmco_csr_approver", "crates/csr-approver/src/lib.rs - Approver (line 12)"),
                    Outcome::Passed
                ),
                (id(byoh, CRASHED_BINARY), Outcome::Failed),
                (id(byoh, "scenario_1_hosts_join"), Outcome::Passed),
                (id(operator, "files::tests::refresh_mints_a_token"), Outcome::Passed),
                (id(operator, "instances::tests::a_host_is_configured"), Outcome::Failed),
                (id(operator, "machines::tests::slow_one"), Outcome::Ignored),
                (
                    id("unittests src/lib.rs (wmco_csr_approver)", "rules::tests::a1_requires_the_node_prefix"),
                    Outcome::Passed
                ),
                (
                    id("unittests src/lib.rs (wmco_csr_approver)", "rules::tests::b2_rejects_extra_usages"),
                    Outcome::Passed
                ),
            ])
        );
        assert_eq!(outcome.crashed, [byoh]);
    }

    #[test]
    fn a_binary_cut_off_at_the_end_of_the_output_crashed() {
        let outcome =
            parse_run("     Running tests/upgrade.rs (target/debug/deps/upgrade-0123abcd)\n\nrunning 1 test\n");
        assert_eq!(
            outcome.tests,
            BTreeMap::from([(id("tests/upgrade.rs (upgrade)", CRASHED_BINARY), Outcome::Failed)])
        );
    }

    #[test]
    fn a_single_threaded_result_after_other_output_completes_its_test() {
        let outcome = parse_run(
            "     Running tests/real_payload.rs (x/real_payload-e1)\n\nrunning 1 test\n\
             test one_host_on_the_real_payload ... \nwmco-sandbox: some stray output\nok\n\ntest result: ok. 1 passed\n",
        );
        assert_eq!(
            outcome.tests,
            BTreeMap::from([(
                id("tests/real_payload.rs (real_payload)", "one_host_on_the_real_payload"),
                Outcome::Passed
            )])
        );
    }

    fn run_with(tests: &[(&str, Outcome)]) -> RunOutcome {
        RunOutcome {
            tests: tests.iter().map(|(name, outcome)| (id("tests/byoh.rs (byoh)", name), *outcome)).collect(),
            crashed: Vec::new(),
        }
    }

    #[test]
    fn the_table_lists_each_test_not_green_every_time_with_its_passes() {
        let mut repetition = Repetition::default();
        repetition.add_raw(
            "exit code 0".to_owned(),
            true,
            run_with(&[("steady", Outcome::Passed), ("flaky", Outcome::Passed), ("off", Outcome::Ignored)]),
        );
        repetition.add_raw(
            "exit code 101".to_owned(),
            false,
            run_with(&[("steady", Outcome::Passed), ("flaky", Outcome::Failed), ("off", Outcome::Ignored)]),
        );
        repetition.add_raw("exit code 101".to_owned(), false, parse_run(RUN));
        let not_green = repetition.not_green();
        let names: Vec<(&str, usize, usize, usize)> = not_green
            .iter()
            .filter(|row| row.id.binary == "tests/byoh.rs (byoh)")
            .map(|row| (row.id.name.as_str(), row.passes, row.failures, row.missing))
            .collect();
        assert_eq!(
            names,
            [
                (CRASHED_BINARY, 0, 1, 2),
                ("flaky", 1, 1, 1),
                ("off", 0, 0, 1),
                ("scenario_1_hosts_join", 1, 0, 2),
                ("steady", 2, 0, 1)
            ]
        );
        assert!(!repetition.all_green());
        let report = repetition.report();
        assert!(
            report.contains("    run 2/3: 1 passed, 1 failed, 1 ignored, 0 binaries crashed; exit code 101"),
            "{report}"
        );
        assert!(report.contains("    flaky  "), "{report}");
        assert!(report.contains(" 1/3  not reported in 1"), "{report}");
        let failing = report
            .lines()
            .find(|line| line.starts_with("    instances::tests::a_host_is_configured "))
            .unwrap_or_else(|| panic!("no row for the failing test: {report}"));
        assert!(failing.contains(" unittests src/lib.rs (wmco_operator) "), "{failing}");
        assert!(failing.ends_with(" 0/3  not reported in 2"), "{failing}");
        assert!(report.contains("==> totals: 3 runs,"), "{report}");
    }

    #[test]
    fn green_runs_print_no_table_and_pass() {
        let mut repetition = Repetition::default();
        for _ in 0..2 {
            repetition.add_raw(
                "exit code 0".to_owned(),
                true,
                run_with(&[("steady", Outcome::Passed), ("off", Outcome::Ignored)]),
            );
        }
        assert!(repetition.all_green());
        let report = repetition.report();
        assert!(report.contains("==> every test was green in all 2 runs"), "{report}");
        assert!(
            report.contains("==> totals: 2 runs, 2 tests, 0 not green every time (0 failures in all runs), 0 runs"),
            "{report}"
        );
    }

    #[test]
    fn a_run_that_failed_without_test_lines_is_not_green() {
        let mut repetition = Repetition::default();
        repetition.add_raw(
            "exit code 101".to_owned(),
            false,
            parse_run("error[E0425]: cannot find value `x` in this scope\n"),
        );
        assert!(!repetition.all_green());
    }
}
