//! The product manifest and the wrapper modules of `payload/build/` agree: every Go source's wrapper requires the
//! manifest's module at the manifest's exact version, lists each built file's main package as a `tool`, and has a
//! `go.sum`; the Kubernetes binaries stay on the e2e control plane's minor version.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use wmco_payload_manifest::{Manifest, Source};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `require` (module, version) pairs and `tool` paths of a go.mod, block and single-line forms.
#[derive(Debug, Default)]
struct GoMod {
    requires: BTreeSet<(String, String)>,
    tools: BTreeSet<String>,
}

fn parse_go_mod(text: &str) -> GoMod {
    let mut parsed = GoMod::default();
    let mut block: Option<&str> = None;
    for raw in text.lines() {
        let line = raw.split("//").next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if let Some(directive) = block {
            if line == ")" {
                block = None;
                continue;
            }
            add_entry(&mut parsed, directive, line);
            continue;
        }
        let (directive, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        match rest.trim() {
            "(" => block = Some(directive_name(directive)),
            entry => add_entry(&mut parsed, directive_name(directive), entry),
        }
    }
    parsed
}

fn directive_name(word: &str) -> &'static str {
    match word {
        "require" => "require",
        "tool" => "tool",
        _ => "other",
    }
}

fn add_entry(parsed: &mut GoMod, directive: &str, entry: &str) {
    let words: Vec<&str> = entry.split_whitespace().collect();
    match (directive, words.as_slice()) {
        ("require", [module, version]) => {
            parsed.requires.insert(((*module).to_owned(), (*version).to_owned()));
        }
        ("tool", [path]) => {
            parsed.tools.insert((*path).to_owned());
        }
        _ => {}
    }
}

fn wrapper(build: &str) -> GoMod {
    let path = workspace_root().join("payload/build").join(build).join("go.mod");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    parse_go_mod(&text)
}

#[test]
fn every_go_source_is_pinned_by_its_wrapper_module() {
    let manifest = Manifest::product().unwrap();
    let mut checked = 0;
    for component in &manifest.components {
        let Source::Go(source) = &component.source else { continue };
        let go_mod = wrapper(&source.build);
        assert!(
            go_mod.requires.contains(&(source.module.clone(), source.version.clone())),
            "payload/build/{}/go.mod does not require {} {} (component {})",
            source.build,
            source.module,
            source.version,
            component.name
        );
        let go_sum = workspace_root().join("payload/build").join(&source.build).join("go.sum");
        let sums = std::fs::read_to_string(&go_sum).unwrap_or_else(|error| panic!("{}: {error}", go_sum.display()));
        assert!(
            sums.contains(&format!("{} {} h1:", source.module, source.version)),
            "{} pins no hash of {} {}",
            go_sum.display(),
            source.module,
            source.version
        );
        for file in &component.files {
            let import_path = source.import_path(file.package.as_deref().unwrap());
            assert!(
                go_mod.tools.contains(&import_path),
                "payload/build/{}/go.mod lists no tool {import_path} (file {})",
                source.build,
                file.path
            );
            checked += 1;
        }
    }
    assert!(checked >= 13, "only {checked} built files checked");
}

#[test]
fn kubernetes_binaries_stay_on_the_control_plane_minor() {
    let minor = |version: &str| version.split('.').nth(1).map(str::to_owned);
    let control_plane = {
        let path = workspace_root().join("e2e/controlplane/go.mod");
        parse_go_mod(&std::fs::read_to_string(&path).unwrap())
    };
    let (_, control_plane_version) =
        control_plane.requires.iter().find(|(module, _)| module == "k8s.io/kubernetes").unwrap().clone();
    let manifest = Manifest::product().unwrap();
    for name in ["kubelet", "kube-proxy", "kube-log-runner"] {
        let component = manifest.component(name).unwrap();
        let Source::Go(source) = &component.source else { panic!("{name} is built") };
        assert_eq!(
            minor(&source.version),
            minor(&control_plane_version),
            "{name} {} is not on the e2e control plane's minor ({control_plane_version})",
            source.version
        );
    }
}

#[test]
fn the_go_mod_reader_sees_blocks_single_lines_and_ignores_comments() {
    let parsed = parse_go_mod(
        "module x\n\ngo 1.26\n\ntool (\n\ta/b\n\tc/d // why\n)\ntool e/f\n\nrequire (\n\tk8s.io/x v1.2.3 // indirect\n)\n\
         require g/h v0.1.0\nreplace i/j => k/l v1\n",
    );
    assert_eq!(parsed.tools, ["a/b", "c/d", "e/f"].into_iter().map(String::from).collect());
    assert_eq!(
        parsed.requires,
        [("g/h", "v0.1.0"), ("k8s.io/x", "v1.2.3")].into_iter().map(|(m, v)| (m.to_owned(), v.to_owned())).collect()
    );
}
