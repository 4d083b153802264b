//! The Debian packages the build, the tests and the sandbox need, installed by `.ci/install-deps.sh` (only what is
//! missing; `apt-get update` first then). `cargo xtask test` and `cargo xtask sandbox` run it first, so the
//! README's two commands are the whole set-up of a fresh machine.

use std::process::Command;

use crate::stages::workspace_root;

/// `bash .ci/install-deps.sh`.
pub fn install_command() -> Command {
    let root = workspace_root();
    let mut command = Command::new("bash");
    command.arg(root.join(".ci/install-deps.sh")).current_dir(root);
    command
}
