//! What the `wmco` binary needs at run time besides itself: the shared libraries `ldd` lists (OpenSSL and zlib
//! for libssh2, glibc, the dynamic loader), each with the Debian package it came from, and the CA bundle.
//! The binary links OpenSSL dynamically through ssh2, so a static or `scratch`-only image is not an option; the
//! libraries are copied from the build machine, which is also where the binary was linked against them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};

/// The CA bundle Debian's `ca-certificates` package maintains; the image holds it at the same path.
pub const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A shared library the binary loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeLibrary {
    /// The path the loader looks for (`/lib/x86_64-linux-gnu/libssl.so.3`, `/lib64/ld-linux-x86-64.so.2`).
    pub path: PathBuf,
    /// The file behind it on this machine (symbolic links resolved).
    pub file: PathBuf,
    /// `package version` of the Debian package owning it, when dpkg knows it.
    pub package: Option<String>,
}

/// The libraries `binary` loads, from `ldd`, with their packages.
///
/// # Errors
/// `ldd` cannot run or fails, a library is not found, or a path cannot be resolved.
pub fn runtime_libraries(binary: &Path) -> anyhow::Result<Vec<RuntimeLibrary>> {
    let output = Command::new("ldd").arg(binary).output().context("cannot run ldd (Debian package libc-bin)")?;
    if !output.status.success() {
        bail!("ldd {} failed: {}", binary.display(), String::from_utf8_lossy(&output.stderr));
    }
    let mut libraries = Vec::new();
    for path in parse_ldd(&String::from_utf8_lossy(&output.stdout))? {
        let file = std::fs::canonicalize(&path).with_context(|| format!("cannot resolve {}", path.display()))?;
        let package = debian_package(&path).or_else(|| debian_package(&file));
        libraries.push(RuntimeLibrary { path, file, package });
    }
    Ok(libraries)
}

/// The library paths in `ldd` output: `name => /path (0x…)` and `/path (0x…)` lines; the vDSO has no file.
///
/// # Errors
/// A library `ldd` could not find (`name => not found`).
fn parse_ldd(output: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for line in output.lines().map(str::trim).filter(|line| !line.is_empty()) {
        let target = match line.split_once("=>") {
            Some((name, target)) => {
                let target = target.trim();
                if target.starts_with("not found") {
                    bail!("ldd: {} not found", name.trim());
                }
                target
            }
            None => line,
        };
        let path = target.split_whitespace().next().unwrap_or_default();
        if path.starts_with('/') {
            paths.push(PathBuf::from(path));
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// `package version` of the Debian package owning `file` (dpkg knows each file by the path its package ships, the
/// `/usr`-merged one or not, so callers try both).
fn debian_package(file: &Path) -> Option<String> {
    let owner = Command::new("dpkg").arg("-S").arg(file).output().ok().filter(|output| output.status.success())?;
    let text = String::from_utf8_lossy(&owner.stdout);
    let package = text.lines().next()?.split_once(':')?.0.trim().to_owned();
    let version = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}"])
        .arg(&package)
        .output()
        .ok()
        .filter(|output| output.status.success())?;
    Some(format!("{package} {}", String::from_utf8_lossy(&version.stdout).trim()))
}

/// The text of `/usr/share/doc/wmco/runtime-libraries.txt`: one line per library, its path and where it came from.
pub fn libraries_listing(libraries: &[RuntimeLibrary]) -> String {
    let mut text = String::from("# Shared libraries of /usr/bin/wmco, copied from the machine that built the image.\n");
    for library in libraries {
        let package = library.package.as_deref().unwrap_or("(no Debian package)");
        text.push_str(&format!("{} {package}\n", library.path.display()));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_every_library_path_and_the_loader_but_not_the_vdso() {
        let output = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                      \tlibssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x00007f1)\n\
                      \tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x00007f2)\n\
                      \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f3)\n\
                      \t/lib64/ld-linux-x86-64.so.2 (0x00007f4)\n";
        let paths = parse_ldd(output).unwrap();
        assert_eq!(
            paths,
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib/x86_64-linux-gnu/libssl.so.3",
                "/lib/x86_64-linux-gnu/libz.so.1",
                "/lib64/ld-linux-x86-64.so.2",
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn a_missing_library_is_an_error_naming_it() {
        let error = parse_ldd("\tlibssh2.so.1 => not found\n").unwrap_err();
        assert_eq!(error.to_string(), "ldd: libssh2.so.1 not found");
    }

    #[test]
    fn the_listing_names_each_library_and_its_package() {
        let libraries = [
            RuntimeLibrary {
                path: "/lib/x86_64-linux-gnu/libssl.so.3".into(),
                file: "/usr/lib/x86_64-linux-gnu/libssl.so.3".into(),
                package: Some("libssl3 3.0.17-1~deb12u2".into()),
            },
            RuntimeLibrary { path: "/lib/x/libother.so".into(), file: "/lib/x/libother.so".into(), package: None },
        ];
        assert_eq!(
            libraries_listing(&libraries).lines().skip(1).collect::<Vec<_>>(),
            ["/lib/x86_64-linux-gnu/libssl.so.3 libssl3 3.0.17-1~deb12u2", "/lib/x/libother.so (no Debian package)"]
        );
    }

    #[test]
    fn the_real_binary_s_libraries_resolve_on_this_machine() {
        let libraries = runtime_libraries(Path::new("/bin/sh")).unwrap();
        assert!(libraries.iter().any(|library| library.path.ends_with("libc.so.6")), "{libraries:?}");
        assert!(libraries.iter().all(|library| library.file.is_file()), "{libraries:?}");
    }
}
