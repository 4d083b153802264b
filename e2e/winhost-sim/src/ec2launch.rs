//! EC2Launch v2, AWS's launch agent, as the AWS user data drives it: its installer `AmazonEC2Launch.msi` under
//! `msiexec.exe`, and `EC2Launch.exe` with `version` and `run-task add-routes [--persistent]`. The reference has no
//! section on them; what comes from AWS's documentation ("Install the latest version of EC2Launch v2", the EC2Launch
//! v2 task list) is said so below, the rest is marked unconfirmed.
//!
//! - The installer lives at [`MSI_URL`] (AWS's documentation). A host's [`Host::downloads`] serve it as
//!   [`MSI_CONTENT`], the simulator's stand-in for the package.
//! - `msiexec.exe /i <package> [PROPERTY=VALUE]... /qn|/quiet|/passive [/norestart]` installs it: EC2Launch v2 at
//!   [`LATEST_VERSION`] under `%ProgramFiles%\Amazon\EC2Launch`. `ADDLOCAL` must name `Basic`, and a first install
//!   must also name `Clean` (the default configuration: AWS's documentation says a first install without it fails);
//!   exit 1603 otherwise. Windows Installer's codes: 0 success, 1619 the package cannot be opened (missing file),
//!   1620 not a package this simulator knows, 1639 an invalid command line. Without a quiet option the installer
//!   would wait for a user at its dialog who never comes: the simulator answers 1602, "user cancelled"
//!   (unconfirmed). `msiexec.exe` writes nothing to the console.
//! - `EC2Launch.exe version` prints the version alone on one line (unconfirmed: AWS documents the command, not its
//!   output).
//! - `EC2Launch.exe run-task add-routes --persistent` adds the instance metadata routes as persistent routes
//!   (Windows' `route -p`), so they survive a reboot; the task is documented, the destinations in
//!   [`METADATA_ROUTES`] are unconfirmed. `--persistent` exists from [`PERSISTENT_ROUTES_SINCE`] on (the Go operator's
//!   comment on AWS's version history); an older EC2Launch refuses the flag (message and exit code unconfirmed).
//!   Without `--persistent` the routes last until the next boot, which the simulator does not model.
//! - Any other `EC2Launch.exe` command is recorded as an unknown command.
//!
//! [`Host::downloads`]: crate::host::Host::downloads

use crate::disk::WinPath;
use crate::host::{Host, Output};
use crate::ps::provisioning::parse_version;

/// Where EC2Launch v2's program lives.
pub const EXE: &str = r"C:\Program Files\Amazon\EC2Launch\EC2Launch.exe";
/// Where AWS publishes the latest EC2Launch v2 installer.
pub const MSI_URL: &str = "https://s3.amazonaws.com/amazon-ec2launch-v2/windows/amd64/latest/AmazonEC2Launch.msi";
/// The simulator's stand-in for the installer's bytes.
pub const MSI_CONTENT: &[u8] = b"simulated AmazonEC2Launch.msi (EC2Launch v2)\r\n";
/// The version the installer at [`MSI_URL`] installs (a stand-in for whatever `latest` serves; a public install
/// script names a 2.5.2 package).
pub const LATEST_VERSION: &str = "2.5.2";
/// The first EC2Launch v2 whose `add-routes` task takes `--persistent`.
pub const PERSISTENT_ROUTES_SINCE: &str = "2.0.1643";
/// The routes `add-routes` makes persistent: instance metadata, KMS, time and DNS addresses of the link-local
/// 169.254.169.0/24 (unconfirmed list).
pub const METADATA_ROUTES: [&str; 6] = [
    "169.254.169.254/32",
    "169.254.169.250/32",
    "169.254.169.251/32",
    "169.254.169.249/32",
    "169.254.169.123/32",
    "169.254.169.253/32",
];

/// Windows Installer's exit codes the simulator uses.
const INSTALL_FAILURE: u32 = 1603;
const USER_EXIT: u32 = 1602;
const PACKAGE_OPEN_FAILED: u32 = 1619;
const PACKAGE_INVALID: u32 = 1620;
const INVALID_COMMAND_LINE: u32 = 1639;

/// Runs `msiexec.exe` with its argv (see the module documentation).
///
/// ```
/// use winhost_sim::host::{Host, Identity, Latency};
/// let root = tempfile::tempdir()?;
/// let identity = Identity {
///     hostname: "win-1".into(),
///     fqdn: "win-1.example.test".into(),
///     build: 20348,
///     ubr: 2849,
///     node_ip: "203.0.113.10".parse()?,
/// };
/// let mut host = Host::new(identity, root.path(), Latency::zero())?;
/// let arguments = ["/i", r"C:\Windows\Temp\AmazonEC2Launch.msi", "/qn"].map(String::from);
/// assert_eq!(winhost_sim::ec2launch::msiexec(&mut host, &arguments).code, 1619, "nothing downloaded yet");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn msiexec(host: &mut Host, arguments: &[String]) -> Output {
    let mut package = None;
    let mut quiet = false;
    let mut features: Option<Vec<String>> = None;
    let mut index = 0;
    while index < arguments.len() {
        let argument = &arguments[index];
        match argument.to_ascii_lowercase().as_str() {
            "/i" | "/package" => {
                package = arguments.get(index + 1).cloned();
                index += 1;
            }
            "/qn" | "/quiet" | "/q" | "/passive" => quiet = true,
            "/norestart" => {}
            lowered => match lowered.split_once('=') {
                Some(("addlocal", value)) => {
                    features = Some(value.trim_matches('"').split(',').map(str::to_ascii_lowercase).collect());
                }
                Some((property, _)) if !property.starts_with('/') => {}
                _ => return Output::new("", "", INVALID_COMMAND_LINE),
            },
        }
        index += 1;
    }
    let Some(package) = package else { return Output::new("", "", INVALID_COMMAND_LINE) };
    if !quiet {
        return Output::new("", "", USER_EXIT);
    }
    let Some(content) = WinPath::parse(&package).ok().and_then(|path| host.disk.read(&path).ok()) else {
        return Output::new("", "", PACKAGE_OPEN_FAILED);
    };
    if content != MSI_CONTENT {
        return Output::new("", "", PACKAGE_INVALID);
    }
    if let Some(features) = &features {
        let has = |feature: &str| features.iter().any(|named| named == feature);
        if !has("basic") || (host.ec2launch_version.is_none() && !has("clean")) {
            return Output::new("", "", INSTALL_FAILURE);
        }
    }
    match host.install_ec2launch(LATEST_VERSION) {
        Ok(()) => Output::ok(""),
        Err(_) => Output::new("", "", INSTALL_FAILURE),
    }
}

/// Runs `EC2Launch.exe` with its argv; `None` when EC2Launch v2 is not installed (there is no such program).
pub fn ec2launch(host: &mut Host, arguments: &[String]) -> Option<Output> {
    let version = host.ec2launch_version.clone()?;
    let words: Vec<String> = arguments.iter().map(|argument| argument.to_ascii_lowercase()).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    Some(match words.as_slice() {
        ["version"] => Output::ok(format!("{version}\r\n")),
        ["run-task", "add-routes"] => Output::ok(""),
        ["run-task", "add-routes", "--persistent"] => {
            let supported = parse_version(&version)
                .zip(parse_version(PERSISTENT_ROUTES_SINCE))
                .is_some_and(|(installed, since)| installed >= since);
            if !supported {
                return Some(Output::new("", "Error: unknown flag: --persistent\r\n", 1));
            }
            for route in METADATA_ROUTES {
                if !host.persistent_routes.iter().any(|existing| existing == route) {
                    host.persistent_routes.push(route.to_owned());
                }
            }
            Output::ok("")
        }
        _ => {
            host.record_unknown("EC2Launch.exe", &arguments.join(" "));
            Output::new("", format!("Error: unknown command \"{}\" for \"EC2Launch\"\r\n", arguments.join(" ")), 1)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::tests::test_host;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    fn download(host: &Host) {
        host.disk.write(&WinPath::parse(r"C:\Windows\Temp\e.msi").unwrap(), MSI_CONTENT).unwrap();
    }

    #[test]
    fn a_first_install_needs_the_default_configuration_and_an_upgrade_keeps_the_program() {
        let (_root, mut host) = test_host();
        download(&host);
        assert_eq!(msiexec(&mut host, &argv(r"/i C:\Windows\Temp\e.msi ADDLOCAL=Basic /qn")).code, 1603);
        assert_eq!(host.ec2launch_version, None);
        assert_eq!(msiexec(&mut host, &argv(r"/i C:\Windows\Temp\e.msi ADDLOCAL=Basic,Clean")).code, 1602);
        assert_eq!(msiexec(&mut host, &argv(r"/i C:\Windows\Temp\e.msi ADDLOCAL=Basic,Clean /qn /norestart")).code, 0);
        assert_eq!(host.ec2launch_version.as_deref(), Some(LATEST_VERSION));
        assert_eq!(host.disk.entry(&WinPath::parse(EXE).unwrap()), Some(crate::disk::Entry::File));

        host.install_ec2launch("2.0.1000").unwrap();
        assert_eq!(msiexec(&mut host, &argv(r"/i C:\Windows\Temp\e.msi ADDLOCAL=Basic /quiet")).code, 0);
        assert_eq!(host.ec2launch_version.as_deref(), Some(LATEST_VERSION));
        assert_eq!(msiexec(&mut host, &argv(r"/i C:\Windows\Temp\missing.msi /qn")).code, 1619);
        host.disk.write(&WinPath::parse(r"C:\Windows\Temp\other.msi").unwrap(), b"other").unwrap();
        assert_eq!(msiexec(&mut host, &argv(r"/i C:\Windows\Temp\other.msi /qn")).code, 1620);
        assert_eq!(msiexec(&mut host, &argv("/x /qn")).code, 1639);
    }

    #[test]
    fn version_and_persistent_routes_and_unknown_commands() {
        let (_root, mut host) = test_host();
        assert_eq!(ec2launch(&mut host, &argv("version")), None, "not installed: no such program");
        host.install_ec2launch("2.0.1000").unwrap();
        assert_eq!(ec2launch(&mut host, &argv("version")).unwrap().stdout, "2.0.1000\r\n");
        let old = ec2launch(&mut host, &argv("run-task add-routes --persistent")).unwrap();
        assert_eq!(old.code, 1, "{old:?}");
        assert!(host.persistent_routes.is_empty());
        host.install_ec2launch(PERSISTENT_ROUTES_SINCE).unwrap();
        for _ in 0..2 {
            assert_eq!(ec2launch(&mut host, &argv("run-task add-routes --persistent")).unwrap().code, 0);
        }
        assert_eq!(host.persistent_routes, METADATA_ROUTES);
        assert!(host.unknown_commands.is_empty());
        assert_eq!(ec2launch(&mut host, &argv("reset --clean")).unwrap().code, 1);
        assert_eq!(host.unknown_commands.len(), 1);
    }
}
