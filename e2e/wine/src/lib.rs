//! Running the payload's Windows executables under Debian's Wine 8.0 (`/usr/lib/wine/wine64`), for the payload
//! smoke test (`cargo xtask payload smoke`) and the e2e scenario in which the real `kubelet.exe` meets the
//! operator's CSR approver.
//!
//! Wine 8.0 cannot start Go ≥ 1.22 Windows binaries on its own: they read random bytes through `ProcessPrng` from
//! `bcryptprimitives.dll`, which Wine 8.0 lacks (`fatal error: bcryptprimitives.dll not found`). [`WinePrefix`]
//! builds the stub of `payload/wine/bcryptprimitives.c` (compiled into this crate) with Debian's
//! `x86_64-w64-mingw32-gcc` and installs it into the prefix's `windows/system32`. Prefixes live in the project's
//! cache (`${WMCO_CACHE:-~/.cache/wmco-rs}/wine/`), never in the user's home; a prefix is keyed by the stub's
//! hash, and created once under a temporary name, then renamed, so an interrupted set-up never looks complete.

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// Debian's 64-bit Wine loader.
pub const WINE_LOADER: &str = "/usr/lib/wine/wine64";

/// The C source of the `bcryptprimitives.dll` stub.
pub const STUB_SOURCE: &str = include_str!("../../../payload/wine/bcryptprimitives.c");

/// A Wine set-up or run failed.
#[derive(Debug, thiserror::Error)]
pub enum WineError {
    /// A tool the prefix needs is not installed.
    #[error("{tool} is missing: install Debian's {package} (bash .ci/install-deps.sh does)")]
    Missing {
        /// The missing program.
        tool: String,
        /// The Debian package that provides it.
        package: &'static str,
    },
    /// A file-system step failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
    /// A set-up command exited with failure.
    #[error("{command} failed ({status})")]
    SetUp {
        /// The command.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
    },
    /// The program's output never contained the expected text.
    #[error("expected {expected:?} in the output of {program}; it {ended} and printed: {tail}")]
    NotPrinted {
        /// The program run.
        program: String,
        /// The text looked for.
        expected: String,
        /// How the program ended (`exited with exit status: 1`, `was stopped`).
        ended: String,
        /// The output's last lines, joined with ` | `.
        tail: String,
    },
}

fn io_error(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> WineError + use<> {
    let path = path.to_path_buf();
    move |source| WineError::Io { action, path, source }
}

/// The project's cache root: `$WMCO_CACHE`, else `$HOME/.cache/wmco-rs`, else a directory in the system temp dir.
pub fn cache_root() -> PathBuf {
    if let Some(cache) = std::env::var_os("WMCO_CACHE").filter(|value| !value.is_empty()) {
        return PathBuf::from(cache);
    }
    match std::env::var_os("HOME").filter(|value| !value.is_empty()) {
        Some(home) => PathBuf::from(home).join(".cache").join("wmco-rs"),
        None => std::env::temp_dir().join("wmco-rs-cache"),
    }
}

/// A Wine prefix with the `bcryptprimitives.dll` stub installed.
#[derive(Debug, Clone)]
pub struct WinePrefix {
    path: PathBuf,
}

impl WinePrefix {
    /// The shared prefix in the cache, created (`wineboot --init`, stub built and installed) if absent.
    ///
    /// ```no_run
    /// let prefix = wmco_wine::WinePrefix::prepare()?;
    /// let line = prefix.run_until(std::path::Path::new("/payload/kube-node/kubelet.exe"), &["--version"],
    ///     "Kubernetes v1.36.3", std::time::Duration::from_secs(60))?;
    /// assert!(line.contains("v1.36.3"));
    /// # Ok::<(), wmco_wine::WineError>(())
    /// ```
    ///
    /// # Errors
    /// [`WineError`] when Wine or MinGW is missing or a set-up step fails.
    pub fn prepare() -> Result<Self, WineError> {
        Self::prepare_in(&cache_root().join("wine"))
    }

    /// Like [`WinePrefix::prepare`], with the prefixes kept in `wine_dir`.
    ///
    /// # Errors
    /// [`WineError`] when Wine or MinGW is missing or a set-up step fails.
    pub fn prepare_in(wine_dir: &Path) -> Result<Self, WineError> {
        if !Path::new(WINE_LOADER).is_file() {
            return Err(WineError::Missing { tool: WINE_LOADER.to_owned(), package: "wine64" });
        }
        let stub_hash = hex::encode(Sha256::digest(STUB_SOURCE.as_bytes()));
        let key = &stub_hash[..12];
        let path = wine_dir.join(format!("prefix-{key}"));
        if path.join("drive_c/windows/system32/bcryptprimitives.dll").is_file() {
            return Ok(Self { path });
        }
        fs::create_dir_all(wine_dir).map_err(io_error("create", wine_dir))?;
        let staging = wine_dir.join(format!(".prefix-{key}.partial-{}", std::process::id()));
        if staging.exists() {
            fs::remove_dir_all(&staging).map_err(io_error("remove", &staging))?;
        }
        let source = wine_dir.join(format!("bcryptprimitives-{key}.c"));
        fs::write(&source, STUB_SOURCE).map_err(io_error("write", &source))?;
        let dll = wine_dir.join(format!("bcryptprimitives-{key}.dll"));
        let mut compile = Command::new("x86_64-w64-mingw32-gcc");
        compile.args(["-shared", "-O2", "-Wl,--kill-at", "-o"]).arg(&dll).arg(&source).arg("-ladvapi32");
        run_set_up(compile, "x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64")?;
        let staged = Self { path: staging.clone() };
        let mut boot = staged.command("wineboot");
        boot.arg("--init").stdout(Stdio::null()).stderr(Stdio::null());
        run_set_up(boot, WINE_LOADER, "wine64")?;
        staged.shut_down();
        let system32 = staging.join("drive_c/windows/system32");
        fs::create_dir_all(&system32).map_err(io_error("create", &system32))?;
        let installed = system32.join("bcryptprimitives.dll");
        fs::copy(&dll, &installed).map_err(io_error("install the stub as", &installed))?;
        match fs::rename(&staging, &path) {
            Ok(()) => Ok(Self { path }),
            // Another process finished the same prefix first: use it.
            Err(_) if path.join("drive_c/windows/system32/bcryptprimitives.dll").is_file() => {
                let _ = fs::remove_dir_all(&staging);
                Ok(Self { path })
            }
            Err(source) => Err(WineError::Io { action: "rename the prepared prefix to", path, source }),
        }
    }

    /// A private copy of this prefix at `target` (which must not exist), for a run that changes the prefix's
    /// drive (the e2e kubelet maps `C:\k` onto a simulated host's disk).
    ///
    /// # Errors
    /// [`WineError::SetUp`] or [`WineError::Io`] if the copy fails.
    pub fn copy_to(&self, target: &Path) -> Result<Self, WineError> {
        let mut copy = Command::new("cp");
        copy.arg("-a").arg(&self.path).arg(target);
        run_set_up(copy, "cp", "coreutils")?;
        Ok(Self { path: target.to_path_buf() })
    }

    /// The prefix directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory Wine shows as `C:\`.
    pub fn drive_c(&self) -> PathBuf {
        self.path.join("drive_c")
    }

    /// `wine64 PROGRAM` in this prefix: Wine's own messages off, no display, standard input closed.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(WINE_LOADER);
        command
            .arg(program)
            .env("WINEPREFIX", &self.path)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
            .env_remove("DISPLAY")
            .stdin(Stdio::null());
        command
    }

    /// Runs `binary args` until its output (standard output and error) contains `expect`, then stops it, or
    /// until it exits or `deadline` passes; returns the line holding the expected text.
    ///
    /// # Errors
    /// [`WineError::NotPrinted`] with the output's last lines when the text never appeared.
    pub fn run_until(
        &self,
        binary: &Path,
        args: &[&str],
        expect: &str,
        deadline: Duration,
    ) -> Result<String, WineError> {
        let mut child = self
            .command(binary)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io_error("start wine64 for", binary))?;
        let output = collect_until(&mut child, expect, Instant::now() + deadline);
        let ended = stop(&mut child);
        match output.lines().find(|line| line.contains(expect)) {
            Some(line) => Ok(line.trim().to_owned()),
            None => Err(WineError::NotPrinted {
                program: format!("{} {}", binary.display(), args.join(" ")),
                expected: expect.to_owned(),
                ended,
                tail: last_lines(&output, 6),
            }),
        }
    }

    /// Stops the prefix's wineserver and every Wine process in it.
    pub fn shut_down(&self) {
        let _ = Command::new("wineserver")
            .arg("-k")
            .env("WINEPREFIX", &self.path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn run_set_up(mut command: Command, tool: &str, package: &'static str) -> Result<(), WineError> {
    let status = command.status().map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => WineError::Missing { tool: tool.to_owned(), package },
        _ => WineError::Io { action: "run", path: PathBuf::from(tool), source: error },
    })?;
    if status.success() { Ok(()) } else { Err(WineError::SetUp { command: format!("{command:?}"), status }) }
}

/// Reads the child's output until it contains `expect`, the pipes close, or `deadline` passes.
fn collect_until(child: &mut Child, expect: &str, deadline: Instant) -> String {
    let (sender, receiver) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        spawn_reader(stdout, sender.clone());
    }
    if let Some(stderr) = child.stderr.take() {
        spawn_reader(stderr, sender);
    }
    let mut output = String::new();
    while !output.contains(expect) {
        let left = deadline.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok(chunk) => output.push_str(&chunk),
            Err(_) => break,
        }
    }
    output
}

fn spawn_reader(mut pipe: impl Read + Send + 'static, sender: mpsc::Sender<String>) {
    std::thread::spawn(move || {
        let mut buffer = [0_u8; 8192];
        while let Ok(read) = pipe.read(&mut buffer) {
            if read == 0 || sender.send(String::from_utf8_lossy(&buffer[..read]).into_owned()).is_err() {
                break;
            }
        }
    });
}

/// Stops the child if it still runs and says how it ended.
fn stop(child: &mut Child) -> String {
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
        let _ = child.wait();
        return "was stopped".to_owned();
    }
    match child.wait() {
        Ok(status) => format!("exited with {status}"),
        Err(error) => format!("could not be waited for ({error})"),
    }
}

/// The last `count` non-empty lines of `text`, joined with ` | `.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|line| !line.is_empty()).collect();
    lines[lines.len().saturating_sub(count)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_keeps_the_tail_without_blank_lines() {
        assert_eq!(last_lines("a\n\nb\nc\n  \nd\n", 2), "c | d");
        assert_eq!(last_lines("only\n", 6), "only");
        assert_eq!(last_lines("", 3), "");
    }

    #[test]
    fn the_stub_exports_process_prng_over_rtl_gen_random() {
        assert!(STUB_SOURCE.contains("ProcessPrng"));
        assert!(STUB_SOURCE.contains("SystemFunction036"));
    }

    #[test]
    fn a_missing_set_up_tool_names_its_debian_package() {
        let error = run_set_up(Command::new("/nonexistent/tool"), "/nonexistent/tool", "some-package").unwrap_err();
        assert_eq!(
            error.to_string(),
            "/nonexistent/tool is missing: install Debian's some-package (bash .ci/install-deps.sh does)"
        );
    }

    #[test]
    fn run_until_stops_a_program_that_keeps_running_once_the_text_appears() {
        // Not Wine: the output collection and stop logic on a plain shell child that never exits by itself. Were
        // the text not noticed, this test would hang until the hour-long deadline.
        let mut child = Command::new("sh")
            .args(["-c", "echo starting; echo 'Version: v1.1.3'; exec sleep 100000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let output = collect_until(&mut child, "Version: v1.1.3", Instant::now() + Duration::from_secs(3600));
        assert_eq!(stop(&mut child), "was stopped");
        assert!(output.contains("Version: v1.1.3"), "{output}");
        assert!(child.try_wait().unwrap().is_some(), "the child was stopped");
    }
}
