//! Native programs the host has, shared by cmd.exe and PowerShell: `sc.exe`, `powershell.exe`, `cmd.exe`,
//! `hostname.exe`, `icacls.exe`, `certutil.exe` and `msiexec.exe`, found by bare name, with or without `.exe`, or by
//! their System32 path; and, once installed, EC2Launch v2's `EC2Launch.exe` by its full path
//! ([`crate::ec2launch`]).

use crate::disk::WinPath;
use crate::host::{Host, Output};

/// The program a command name resolves to (`None`: not a program this host has).
pub fn resolve(name: &str) -> Option<&'static str> {
    let lowered = name.to_ascii_lowercase().replace('/', "\\");
    let (directory, file) = match lowered.rsplit_once('\\') {
        Some((directory, file)) => (Some(directory.to_owned()), file.to_owned()),
        None => (None, lowered),
    };
    let system_directory = |expected: &str| directory.as_deref().is_none_or(|d| d == expected);
    let stem = file.strip_suffix(".exe").unwrap_or(&file);
    match stem {
        "sc" if system_directory(r"c:\windows\system32") => Some("sc"),
        "cmd" if system_directory(r"c:\windows\system32") => Some("cmd"),
        "hostname" if system_directory(r"c:\windows\system32") => Some("hostname"),
        "icacls" if system_directory(r"c:\windows\system32") => Some("icacls"),
        "certutil" if system_directory(r"c:\windows\system32") => Some("certutil"),
        "msiexec" if system_directory(r"c:\windows\system32") => Some("msiexec"),
        "ec2launch" if directory.as_deref() == Some(r"c:\program files\amazon\ec2launch") => Some("ec2launch"),
        "powershell" if system_directory(r"c:\windows\system32\windowspowershell\v1.0") => Some("powershell"),
        _ => None,
    }
}

/// Runs a native program with its argv (`raw` is the unsplit argument text, for `cmd /c`). `None` if the host has
/// no such program.
pub fn run(host: &mut Host, name: &str, arguments: &[String], raw: &str) -> Option<Output> {
    Some(match resolve(name)? {
        "msiexec" => crate::ec2launch::msiexec(host, arguments),
        "ec2launch" => return crate::ec2launch::ec2launch(host, arguments),
        "sc" => crate::sc::run(host, arguments),
        "powershell" => crate::ps::run_powershell_exe(host, arguments),
        "hostname" => Output::ok(format!("{}\r\n", host.identity.hostname)),
        "icacls" => icacls(host, arguments),
        "certutil" => certutil(host, arguments),
        _ => cmd(host, raw),
    })
}

fn cmd(host: &mut Host, raw: &str) -> Output {
    let trimmed = raw.trim_start();
    match trimmed.get(..2) {
        Some(switch) if switch.eq_ignore_ascii_case("/c") => crate::cmd::run_line(host, trimmed[2..].trim_start()),
        _ => Output::new("", "cmd: only /c is available in a non-interactive session\r\n", 1),
    }
}

/// `icacls <path> [/inheritance:r] [/grant <principal>:<perm>]...`: replaces or extends the path's ACL.
fn icacls(host: &mut Host, arguments: &[String]) -> Output {
    let Some((target, options)) = arguments.split_first() else {
        return Output::new("", "Invalid parameter \"\"\r\n", 87);
    };
    let Ok(path) = WinPath::parse(target) else {
        return Output::new(
            "",
            format!(
                "{target}: The filename, directory name, or volume label syntax is incorrect.\r\nSuccessfully processed 0 files; Failed processing 1 files\r\n"
            ),
            123,
        );
    };
    if host.disk.entry(&path).is_none() {
        return Output::new(
            "",
            format!(
                "{target}: The system cannot find the file specified.\r\nSuccessfully processed 0 files; Failed processing 1 files\r\n"
            ),
            2,
        );
    }
    let mut entries = host.acls.get(&path.key()).cloned().unwrap_or_else(|| inherited_acl_of(&path));
    let mut index = 0;
    while index < options.len() {
        let option = options[index].to_ascii_lowercase();
        if option == "/inheritance:r" {
            entries.retain(|entry| !entry.ends_with("(I)"));
        } else if option == "/grant" || option == "/grant:r" {
            let Some(grant) = options.get(index + 1) else {
                return Output::new("", format!("Invalid parameter \"{}\"\r\n", options[index]), 87);
            };
            let principal = grant.split(':').next().unwrap_or_default().to_lowercase();
            entries.retain(|entry| entry.split(':').next().unwrap_or_default().to_lowercase() != principal);
            entries.push(grant.clone());
            index += 1;
        } else {
            return Output::new("", format!("Invalid parameter \"{}\"\r\n", options[index]), 87);
        }
        index += 1;
    }
    host.acls.insert(path.key(), entries);
    Output::ok(format!("processed file: {target}\r\nSuccessfully processed 1 files; Failed processing 0 files\r\n"))
}

/// `certutil -hashfile <path> [algorithm]` (windows-commands.md §2.1): the file's hash in lower-case hex between
/// certutil's header and trailer lines. Only SHA256 is modelled (certutil's default, SHA1, and its other
/// algorithms are refused as a host without them would refuse an unknown one); any other verb is refused.
fn certutil(host: &mut Host, arguments: &[String]) -> Output {
    let (Some(verb), Some(target)) = (arguments.first(), arguments.get(1)) else {
        return certutil_failure("", "0x80070057 (WIN32: 87 ERROR_INVALID_PARAMETER)", "The parameter is incorrect.");
    };
    if !verb.eq_ignore_ascii_case("-hashfile") || arguments.len() > 3 {
        return certutil_failure(verb, "0x80070057 (WIN32: 87 ERROR_INVALID_PARAMETER)", "The parameter is incorrect.");
    }
    let algorithm = arguments.get(2).map_or("SHA1", String::as_str);
    if !algorithm.eq_ignore_ascii_case("SHA256") {
        return certutil_failure("-hashfile", "0x80090008 (-2146893816 NTE_BAD_ALGID)", "Invalid algorithm specified.");
    }
    let hash = WinPath::parse(target).ok().and_then(|path| host.file_hash(&path));
    match hash {
        Some(hash) => Output::ok(format!(
            "SHA256 hash of {target}:\r\n{hash}\r\nCertUtil: -hashfile command completed successfully.\r\n"
        )),
        None => certutil_failure(
            "-hashfile",
            "0x80070002 (WIN32: 2 ERROR_FILE_NOT_FOUND)",
            "The system cannot find the file specified.",
        ),
    }
}

/// certutil's two failure lines (on stdout) and the HRESULT of `code` as its exit status.
fn certutil_failure(verb: &str, code: &str, message: &str) -> Output {
    let status = code
        .strip_prefix("0x")
        .and_then(|hex| hex.split_whitespace().next())
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .unwrap_or(1);
    Output::new(format!("CertUtil: {verb} command FAILED: {code}\r\nCertUtil: {message}\r\n"), "", status)
}

/// The ACL a file inherits: `C:\ProgramData\ssh` (created by the sshd installer) grants only SYSTEM and
/// Administrators; elsewhere Users may read.
pub fn inherited_acl_of(path: &WinPath) -> Vec<String> {
    let mut entries = vec!["NT AUTHORITY\\SYSTEM:F(I)".to_owned(), "BUILTIN\\Administrators:F(I)".to_owned()];
    let ssh_directory = WinPath::parse(r"C:\ProgramData\ssh").is_ok_and(|directory| path.starts_with(&directory));
    if !ssh_directory {
        entries.push("BUILTIN\\Users:RX(I)".to_owned());
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::tests::test_host;

    #[test]
    fn resolves_programs_by_name_and_system_path_only() {
        assert_eq!(resolve("SC.EXE"), Some("sc"));
        assert_eq!(resolve(r"C:\Windows\System32\sc.exe"), Some("sc"));
        assert_eq!(resolve(r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe"), Some("powershell"));
        assert_eq!(resolve(r"C:\k\sc.exe"), None);
        assert_eq!(resolve("ls"), None);
        assert_eq!(resolve("msiexec"), Some("msiexec"));
        assert_eq!(resolve(r"C:\Program Files\Amazon\EC2Launch\EC2Launch.exe"), Some("ec2launch"));
        assert_eq!(resolve("EC2Launch.exe"), None, "not on the PATH");
    }

    #[test]
    fn certutil_hashes_a_file_and_fails_on_a_missing_one_with_its_hresult() {
        let (_root, mut host) = test_host();
        host.disk.create_dir_all(&WinPath::parse(r"C:\k").unwrap()).unwrap();
        host.disk.write(&WinPath::parse(r"C:\k\a b.txt").unwrap(), b"abc").unwrap();
        let output = host.exec("c", r#"certutil -hashfile "C:\k\a b.txt" sha256"#);
        assert_eq!(output.code, 0, "{output:?}");
        assert_eq!(
            output.stdout,
            "SHA256 hash of C:\\k\\a b.txt:\r\nba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\r\n\
             CertUtil: -hashfile command completed successfully.\r\n"
        );
        let missing = host.exec("c", r"certutil.exe -hashfile C:\k\none SHA256");
        assert_eq!(missing.code, 0x8007_0002);
        assert!(missing.stdout.starts_with("CertUtil: -hashfile command FAILED: 0x80070002"), "{missing:?}");
        let chained = host.exec("c", r"certutil -hashfile C:\k\none SHA256 && echo after");
        assert!(!chained.stdout.contains("after"), "{chained:?}");
        assert_eq!(host.exec("c", r#"certutil -hashfile "C:\k\a b.txt""#).code, 0x8009_0008);
        assert_eq!(host.exec("c", "certutil -dump").code, 0x8007_0057);
    }

    #[test]
    fn hostname_cmd_and_icacls() {
        let (_root, mut host) = test_host();
        assert_eq!(host.exec("c", "hostname").stdout, "winworker-1\r\n");
        assert_eq!(host.exec("c", "cmd /c hostname").stdout, "winworker-1\r\n");
        host.disk.write(&WinPath::parse(crate::host::ADMIN_AUTHORIZED_KEYS).unwrap(), b"k").unwrap();
        let output = host.exec(
            "c",
            r#"icacls.exe "C:\ProgramData\ssh\administrators_authorized_keys" /inheritance:r /grant "Administrators:F" /grant "SYSTEM:F""#,
        );
        assert_eq!(output.code, 0, "{output:?}");
        let key = WinPath::parse(crate::host::ADMIN_AUTHORIZED_KEYS).unwrap().key();
        assert_eq!(host.acls[&key], vec!["Administrators:F".to_owned(), "SYSTEM:F".to_owned()]);
    }
}
