//! Records the git commit the binary is built from as `WMCO_GIT_COMMIT` (`unknown` outside a git checkout).

use std::process::Command;

fn main() {
    let commit = std::env::var("WMCO_GIT_COMMIT").ok().filter(|c| !c.is_empty()).unwrap_or_else(|| {
        Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .output()
            .ok()
            .filter(|out| out.status.success())
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".to_owned())
    });
    println!("cargo:rustc-env=WMCO_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-env-changed=WMCO_GIT_COMMIT");
    if let Ok(top) = Command::new("git").args(["rev-parse", "--git-dir"]).output() {
        let git_dir = String::from_utf8_lossy(&top.stdout).trim().to_owned();
        if !git_dir.is_empty() {
            println!("cargo:rerun-if-changed={git_dir}/HEAD");
            println!("cargo:rerun-if-changed={git_dir}/refs/heads");
        }
    }
}
