//! Binary identity checks against real Go binaries: tiny programs built here with the machine's Go (`go` on PATH,
//! `GOTOOLCHAIN=local`, caches under `${WMCO_CACHE:-$HOME/.cache/wmco-rs}/go/`) for Windows, for Linux, as a GUI
//! program and without `-trimpath`, then inspected and checked against manifest entries. Without Go these tests
//! fail and say so: they never skip.

#![allow(clippy::unwrap_used, reason = "test fixtures and helpers: a failed setup must panic")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use wmco_payload_manifest::{
    CHECKSUM_FILE_NAME, IdentityCheck, Manifest, Payload, PayloadBinaryCheck, PeFormat, PeImage, Sha256Digest,
    check_binary, check_payload_binaries, inspect_binary,
};

/// The module path of the probe program (a main module without version control records version `(devel)`).
const PROBE_MODULE: &str = "example.com/wmco/identity-probe";

const PROBE_MAIN: &str = r#"package main

import "fmt"

var version = "unset"

func main() { fmt.Println("identity-probe", version) }
"#;

fn cache_root() -> PathBuf {
    match std::env::var_os("WMCO_CACHE").filter(|value| !value.is_empty()) {
        Some(cache) => PathBuf::from(cache),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/wmco-rs"),
    }
}

/// A temporary module holding the probe program.
struct Probe {
    dir: tempfile::TempDir,
}

impl Probe {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("go.mod"), format!("module {PROBE_MODULE}\n\ngo 1.22\n")).unwrap();
        fs::write(dir.path().join("main.go"), PROBE_MAIN).unwrap();
        Probe { dir }
    }

    /// Builds the probe as `name` for `goos`/amd64 with `args` between `go build` and `-o`.
    fn build(&self, name: &str, goos: &str, args: &[&str]) -> PathBuf {
        let output = self.dir.path().join(name);
        let cache = cache_root();
        let result = Command::new("go")
            .current_dir(self.dir.path())
            .arg("build")
            .arg("-buildvcs=false")
            .args(args)
            .arg("-o")
            .arg(&output)
            .arg(".")
            .env("GOOS", goos)
            .env("GOARCH", "amd64")
            .env("CGO_ENABLED", "0")
            .env("GOTOOLCHAIN", "local")
            .env("GOFLAGS", "-mod=mod")
            .env("GOCACHE", cache.join("go/build"))
            .env("GOMODCACHE", cache.join("go/mod"))
            .env_remove("GOWORK")
            .output()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot run `go` ({error}): these tests build tiny Go programs with the machine's Go (1.26); \
                     install Go and put `go` on PATH"
                )
            });
        assert!(
            result.status.success(),
            "go build {args:?} for {goos} failed: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        output
    }
}

/// A manifest with one Go-built component for the probe, expecting `version` and `main.version=v9.9.9`.
fn probe_manifest(version: &str) -> Manifest {
    Manifest::from_yaml(
        &format!(
            r#"
schema: wmco.payload/v1
components:
  - name: probe
    version: v9.9.9
    source:
      go:
        module: {PROBE_MODULE}
        version: '{version}'
        build: probe
        version_variables: {{ main.version: v9.9.9 }}
    required: true
    files:
      - path: probe.exe
        destination: 'C:\k\probe.exe'
        typical_size: 2MiB
        package: .
        version_check: {{ args: [], expect: identity-probe v9.9.9 }}
"#
        ),
        "test",
    )
    .unwrap()
}

fn mismatch_lines(manifest: &Manifest, binary: &Path) -> Vec<String> {
    let entry = manifest.file(&"probe.exe".parse().unwrap()).unwrap();
    check_binary(entry, binary).iter().map(ToString::to_string).collect()
}

const RELEASE_FLAGS: &[&str] = &["-trimpath", "-ldflags", "-s -w -X main.version=v9.9.9"];

#[test]
fn a_windows_release_build_reports_exactly_what_it_is_and_matches_its_entry() {
    let probe = Probe::new();
    let binary = probe.build("probe.exe", "windows", RELEASE_FLAGS);

    let identity = inspect_binary(&binary).unwrap();
    let PeImage::Image(headers) = identity.pe else { panic!("not a PE image: {:?}", identity.pe) };
    assert_eq!(headers.format, PeFormat::Pe32Plus);
    assert_eq!((headers.machine_name(), headers.subsystem_name()), ("x86-64".to_owned(), "console".to_owned()));
    let info = &identity.build_info;
    assert!(info.go_version.starts_with("go1."), "{}", info.go_version);
    assert_eq!(info.main_package.as_deref(), Some(PROBE_MODULE));
    let owner = info.owner_module().unwrap();
    assert_eq!((owner.path.as_str(), owner.version.as_str(), owner.sum.as_deref()), (PROBE_MODULE, "(devel)", None));
    assert!(info.dependencies.is_empty(), "{:?}", info.dependencies);
    assert_eq!(
        ["GOOS", "GOARCH", "CGO_ENABLED", "-trimpath"].map(|key| info.setting(key)),
        [Some("windows"), Some("amd64"), Some("0"), Some("true")]
    );
    // Go leaves -ldflags out of a -trimpath build's information (Go issue 52372).
    assert_eq!((info.setting("-ldflags"), info.linker_variables()), (None, None));

    assert_eq!(mismatch_lines(&probe_manifest("(devel)"), &binary), Vec::<String>::new());
    assert_eq!(
        mismatch_lines(&probe_manifest("v1.0.0"), &binary),
        ["probe.exe: module version: expected v1.0.0, found (devel)"]
    );
}

#[test]
fn a_linux_build_fails_naming_goos_and_the_missing_pe_image() {
    let probe = Probe::new();
    let binary = probe.build("probe.exe", "linux", RELEASE_FLAGS);
    let entry_manifest = probe_manifest("(devel)");
    let entry = entry_manifest.file(&"probe.exe".parse().unwrap()).unwrap();
    let mismatches = check_binary(entry, &binary);
    let checks: Vec<IdentityCheck> = mismatches.iter().map(|mismatch| mismatch.check).collect();
    assert_eq!(checks, [IdentityCheck::PeImage, IdentityCheck::Goos], "{mismatches:?}");
    assert!(mismatches[0].to_string().starts_with("probe.exe: PE image: expected a PE32+ image, found not a PE image"));
    assert_eq!(mismatches[1].to_string(), "probe.exe: GOOS: expected windows, found linux");
}

#[test]
fn a_gui_build_fails_naming_the_subsystem() {
    let probe = Probe::new();
    let binary = probe.build("probe.exe", "windows", &["-trimpath", "-ldflags", "-s -w -H windowsgui"]);
    assert_eq!(
        mismatch_lines(&probe_manifest("(devel)"), &binary),
        ["probe.exe: subsystem: expected console, found GUI"]
    );
}

#[test]
fn a_build_without_trimpath_fails_and_its_recorded_version_variables_are_checked() {
    let probe = Probe::new();
    let binary = probe.build("probe.exe", "windows", &["-ldflags", "-s -w -X main.version=v9.9.8"]);
    let info = inspect_binary(&binary).unwrap().build_info;
    assert_eq!(info.setting("-ldflags"), Some("-s -w -X main.version=v9.9.8"));
    assert_eq!(
        mismatch_lines(&probe_manifest("(devel)"), &binary),
        [
            "probe.exe: -trimpath: expected true, found not recorded",
            "probe.exe: version variable: expected -X main.version=v9.9.9, found -X main.version=v9.9.8",
        ]
    );
}

#[test]
fn a_real_payload_is_checked_binary_by_binary() {
    let probe = Probe::new();
    let windows = probe.build("windows.exe", "windows", RELEASE_FLAGS);
    let linux = probe.build("linux.exe", "linux", RELEASE_FLAGS);
    let manifest = probe_manifest("(devel)");
    let payload_dir = tempfile::tempdir().unwrap();

    let install = |binary: &Path| {
        fs::copy(binary, payload_dir.path().join("probe.exe")).unwrap();
        let digest = Sha256Digest::of_bytes(&fs::read(binary).unwrap());
        fs::write(payload_dir.path().join(CHECKSUM_FILE_NAME), format!("{digest}  probe.exe\n")).unwrap();
        Payload::load(payload_dir.path(), &manifest).unwrap()
    };

    let payload = install(&windows);
    assert_eq!(
        check_payload_binaries(&payload, &manifest),
        PayloadBinaryCheck::Real { checked: 1, mismatches: vec![] }
    );

    let payload = install(&linux);
    let outcome = check_payload_binaries(&payload, &manifest);
    assert!(!outcome.is_synthetic());
    let checks: Vec<IdentityCheck> = outcome.mismatches().iter().map(|mismatch| mismatch.check).collect();
    assert_eq!(checks, [IdentityCheck::PeImage, IdentityCheck::Goos]);
    assert!(matches!(outcome, PayloadBinaryCheck::Real { checked: 1, .. }));
}
