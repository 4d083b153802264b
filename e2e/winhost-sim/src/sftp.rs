//! Win32-OpenSSH's SFTP server over a host's disk (windows-commands.md §5): the path forms it accepts (`/C:/k/x`,
//! `C:/k/x`, `C:\k\x`, profile-relative), realpath in the `/C:/...` form, a plain rename that fails onto an existing
//! file, `posix-rename@openssh.com` that deletes then renames, the executable of a running service locked against
//! overwrite, delete and rename, an optional bandwidth limit on reads and writes, and the upload faults of
//! [`crate::faults`] (a dropped connection, a failed or never-answered write, a full disk, a reboot).

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use russh_sftp::protocol::{
    Attrs, Data, File, FileAttributes, Handle, Name, OpenFlags, Packet, Status, StatusCode, Version,
};

use crate::disk::{Disk, Entry, WinPath};
use crate::faults::{DISK_FULL_MESSAGE, FaultAction, Request};
use crate::host::Host;
use crate::ssh::Faults;

/// The profile directory relative paths resolve against.
const PROFILE: &str = r"C:\Users\Administrator";

/// Throttling shared with the control interface: bytes per second (0 = unlimited).
pub type Throttle = Arc<Mutex<u64>>;

/// What a handle refers to.
enum Opened {
    File(WinPath),
    Directory { listed: bool, path: WinPath },
}

/// One SFTP session.
pub struct SftpSession {
    host: Arc<Mutex<Host>>,
    disk: Disk,
    throttle: Throttle,
    handles: HashMap<String, Opened>,
    next_handle: u64,
    faults: Option<SessionFaults>,
}

/// Starts a reboot of the host a session belongs to.
pub type RebootTrigger = Box<dyn Fn() + Send + Sync>;

/// What a session of a served host needs for faults: the rules, the boot it belongs to, its connection (to drop
/// it) and how to reboot the host.
struct SessionFaults {
    faults: Arc<Mutex<Faults>>,
    boot: u64,
    connection: russh::server::Handle,
    reboot: RebootTrigger,
}

impl SftpSession {
    /// A session on `host`.
    pub fn new(host: Arc<Mutex<Host>>, throttle: Throttle) -> SftpSession {
        let disk = lock(&host).disk.clone();
        SftpSession { host, disk, throttle, handles: HashMap::new(), next_handle: 0, faults: None }
    }

    /// The session of `connection`, opened at boot `boot`, subject to `faults`; `reboot` reboots the host.
    pub fn with_faults(
        mut self,
        faults: Arc<Mutex<Faults>>,
        boot: u64,
        connection: russh::server::Handle,
        reboot: RebootTrigger,
    ) -> Self {
        self.faults = Some(SessionFaults { faults, boot, connection, reboot });
        self
    }

    /// The upload fault for a write to `path`, if any; a dead connection (rebooted host, dropped connections)
    /// counts as [`FaultAction::Drop`].
    fn upload_fault(&self, path: &WinPath) -> Option<FaultAction> {
        let session = self.faults.as_ref()?;
        let (dropped, action) = {
            let mut faults = session.faults.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let dropped = faults.drop_connections || faults.rebooting;
            (dropped, faults.take_rule(&Request::Upload(&path.to_string())))
        };
        if dropped || lock(&self.host).boots != session.boot {
            return Some(FaultAction::Drop);
        }
        action
    }

    /// Drops the connection this session runs on.
    async fn drop_connection(&self) {
        if let Some(session) = &self.faults {
            let _ = session
                .connection
                .disconnect(russh::Disconnect::ByApplication, "winhost-sim: connection dropped".into(), "en-US".into())
                .await;
        }
    }

    fn is_locked(&self, path: &WinPath) -> bool {
        let mut host = lock(&self.host);
        host.refresh();
        host.is_locked(path)
    }

    fn attributes(&self, path: &WinPath) -> Result<FileAttributes, StatusCode> {
        let metadata = std::fs::metadata(self.disk.host_path(path)).map_err(|_| StatusCode::NoSuchFile)?;
        let mtime = metadata
            .modified()
            .ok()
            .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|age| u32::try_from(age.as_secs()).ok());
        Ok(FileAttributes {
            size: Some(if metadata.is_dir() { 0 } else { metadata.len() }),
            permissions: Some(if metadata.is_dir() { 0o040_755 } else { 0o100_644 }),
            atime: mtime,
            mtime,
            ..FileAttributes::default()
        })
    }

    async fn pace(&self, bytes: usize) {
        let limit = *self.throttle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if limit > 0 {
            let seconds = bytes as f64 / limit as f64;
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        }
    }

    fn new_handle(&mut self, opened: Opened) -> String {
        self.next_handle += 1;
        let handle = self.next_handle.to_string();
        self.handles.insert(handle.clone(), opened);
        handle
    }

    fn file_of(&self, handle: &str) -> Result<WinPath, StatusCode> {
        match self.handles.get(handle) {
            Some(Opened::File(path)) => Ok(path.clone()),
            _ => Err(StatusCode::Failure),
        }
    }
}

fn lock(host: &Arc<Mutex<Host>>) -> std::sync::MutexGuard<'_, Host> {
    host.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Resolves an SFTP path the way Win32-OpenSSH does (`_wfullpath` against the profile directory).
pub fn resolve(path: &str) -> Result<WinPath, StatusCode> {
    let trimmed = path.trim();
    if trimmed.is_empty() || trimmed == "." {
        return WinPath::parse(PROFILE).map_err(|_| StatusCode::NoSuchFile);
    }
    if let Ok(parsed) = WinPath::parse(trimmed) {
        return Ok(parsed);
    }
    WinPath::parse(&format!("{PROFILE}\\{trimmed}")).map_err(|_| StatusCode::NoSuchFile)
}

fn status(id: u32) -> Status {
    Status { id, status_code: StatusCode::Ok, error_message: "Ok".into(), language_tag: "en-US".into() }
}

/// Reads one SSH string from `data` at `offset`.
fn ssh_string(data: &[u8], offset: &mut usize) -> Option<String> {
    let length_bytes = data.get(*offset..*offset + 4)?;
    let length = u32::from_be_bytes([length_bytes[0], length_bytes[1], length_bytes[2], length_bytes[3]]) as usize;
    let text = data.get(*offset + 4..*offset + 4 + length)?;
    *offset += 4 + length;
    String::from_utf8(text.to_vec()).ok()
}

impl russh_sftp::server::Handler for SftpSession {
    type Error = StatusCode;

    fn unimplemented(&self) -> StatusCode {
        StatusCode::OpUnsupported
    }

    async fn init(&mut self, _version: u32, _extensions: HashMap<String, String>) -> Result<Version, StatusCode> {
        let mut version = Version::new();
        for (name, revision) in [
            ("posix-rename@openssh.com", "1"),
            ("statvfs@openssh.com", "2"),
            ("hardlink@openssh.com", "1"),
            ("fsync@openssh.com", "1"),
        ] {
            version.extensions.insert(name.to_owned(), revision.to_owned());
        }
        Ok(version)
    }

    async fn open(
        &mut self,
        id: u32,
        filename: String,
        flags: OpenFlags,
        _attrs: FileAttributes,
    ) -> Result<Handle, StatusCode> {
        let path = resolve(&filename)?;
        let writing = flags.intersects(OpenFlags::WRITE | OpenFlags::CREATE | OpenFlags::TRUNCATE | OpenFlags::APPEND);
        let entry = self.disk.entry(&path);
        if entry == Some(Entry::Directory) {
            return Err(StatusCode::Failure);
        }
        if writing {
            if self.is_locked(&path) {
                return Err(StatusCode::PermissionDenied);
            }
            let parent_ok = path.parent().is_some_and(|parent| self.disk.entry(&parent) == Some(Entry::Directory));
            if !parent_ok {
                return Err(StatusCode::NoSuchFile);
            }
            if entry.is_none() && !flags.contains(OpenFlags::CREATE) {
                return Err(StatusCode::NoSuchFile);
            }
            if flags.contains(OpenFlags::EXCLUDE) && entry.is_some() {
                return Err(StatusCode::Failure);
            }
            let mut options = OpenOptions::new();
            options.write(true).create(true);
            if flags.contains(OpenFlags::TRUNCATE) {
                self.disk.before_change(&path);
                options.truncate(true);
            }
            options.open(self.disk.host_path(&path)).map_err(|_| StatusCode::Failure)?;
        } else if entry.is_none() {
            return Err(StatusCode::NoSuchFile);
        }
        Ok(Handle { id, handle: self.new_handle(Opened::File(path)) })
    }

    async fn close(&mut self, id: u32, handle: String) -> Result<Status, StatusCode> {
        self.handles.remove(&handle);
        Ok(status(id))
    }

    async fn read(&mut self, id: u32, handle: String, offset: u64, len: u32) -> Result<Data, StatusCode> {
        let path = self.file_of(&handle)?;
        let file = std::fs::File::open(self.disk.host_path(&path)).map_err(|_| StatusCode::NoSuchFile)?;
        let mut buffer = vec![0; len.min(256 * 1024) as usize];
        let read = file.read_at(&mut buffer, offset).map_err(|_| StatusCode::Failure)?;
        if read == 0 {
            return Err(StatusCode::Eof);
        }
        buffer.truncate(read);
        self.pace(read).await;
        Ok(Data { id, data: buffer })
    }

    async fn write(&mut self, id: u32, handle: String, offset: u64, data: Vec<u8>) -> Result<Status, StatusCode> {
        let path = self.file_of(&handle)?;
        match self.upload_fault(&path) {
            Some(action @ (FaultAction::Drop | FaultAction::Reboot)) => {
                if let (FaultAction::Reboot, Some(session)) = (&action, &self.faults) {
                    (session.reboot)();
                }
                self.drop_connection().await;
                return Err(StatusCode::ConnectionLost);
            }
            Some(FaultAction::Hang) => std::future::pending::<()>().await,
            Some(FaultAction::DiskFull) => {
                return Ok(Status {
                    id,
                    status_code: StatusCode::Failure,
                    error_message: DISK_FULL_MESSAGE.into(),
                    language_tag: "en-US".into(),
                });
            }
            Some(_) => return Err(StatusCode::Failure),
            None => {}
        }
        if self.is_locked(&path) {
            return Err(StatusCode::PermissionDenied);
        }
        let file = OpenOptions::new().write(true).open(self.disk.host_path(&path)).map_err(|_| StatusCode::Failure)?;
        file.write_all_at(&data, offset).map_err(|_| StatusCode::Failure)?;
        self.pace(data.len()).await;
        Ok(status(id))
    }

    async fn lstat(&mut self, id: u32, path: String) -> Result<Attrs, StatusCode> {
        Ok(Attrs { id, attrs: self.attributes(&resolve(&path)?)? })
    }

    async fn stat(&mut self, id: u32, path: String) -> Result<Attrs, StatusCode> {
        Ok(Attrs { id, attrs: self.attributes(&resolve(&path)?)? })
    }

    async fn fstat(&mut self, id: u32, handle: String) -> Result<Attrs, StatusCode> {
        let path = self.file_of(&handle)?;
        Ok(Attrs { id, attrs: self.attributes(&path)? })
    }

    async fn setstat(&mut self, id: u32, _path: String, _attrs: FileAttributes) -> Result<Status, StatusCode> {
        Ok(status(id))
    }

    async fn fsetstat(&mut self, id: u32, _handle: String, _attrs: FileAttributes) -> Result<Status, StatusCode> {
        Ok(status(id))
    }

    async fn opendir(&mut self, id: u32, path: String) -> Result<Handle, StatusCode> {
        let path = resolve(&path)?;
        if self.disk.entry(&path) != Some(Entry::Directory) {
            return Err(StatusCode::NoSuchFile);
        }
        Ok(Handle { id, handle: self.new_handle(Opened::Directory { listed: false, path }) })
    }

    async fn readdir(&mut self, id: u32, handle: String) -> Result<Name, StatusCode> {
        let Some(Opened::Directory { listed, path }) = self.handles.get_mut(&handle) else {
            return Err(StatusCode::Failure);
        };
        if *listed {
            return Err(StatusCode::Eof);
        }
        *listed = true;
        let path = path.clone();
        let entries = self.disk.list(&path).map_err(|_| StatusCode::NoSuchFile)?;
        let files = entries
            .into_iter()
            .map(|(name, _, _)| {
                let attrs = self.attributes(&path.join(&name)).unwrap_or_default();
                File { filename: name.clone(), longname: name, attrs }
            })
            .collect();
        Ok(Name { id, files })
    }

    async fn remove(&mut self, id: u32, filename: String) -> Result<Status, StatusCode> {
        let path = resolve(&filename)?;
        match self.disk.entry(&path) {
            None => Err(StatusCode::NoSuchFile),
            Some(Entry::Directory) => Err(StatusCode::Failure),
            Some(Entry::File) if self.is_locked(&path) => Err(StatusCode::PermissionDenied),
            Some(Entry::File) => self.disk.remove(&path).map(|()| status(id)).map_err(|_| StatusCode::Failure),
        }
    }

    async fn mkdir(&mut self, id: u32, path: String, _attrs: FileAttributes) -> Result<Status, StatusCode> {
        let path = resolve(&path)?;
        if self.disk.entry(&path).is_some() {
            return Err(StatusCode::Failure);
        }
        if path.parent().is_none_or(|parent| self.disk.entry(&parent) != Some(Entry::Directory)) {
            return Err(StatusCode::NoSuchFile);
        }
        self.disk.create_dir_all(&path).map(|()| status(id)).map_err(|_| StatusCode::Failure)
    }

    async fn rmdir(&mut self, id: u32, path: String) -> Result<Status, StatusCode> {
        let path = resolve(&path)?;
        match self.disk.list(&path) {
            Err(_) => Err(StatusCode::NoSuchFile),
            Ok(entries) if !entries.is_empty() => Err(StatusCode::Failure),
            Ok(_) => self.disk.remove(&path).map(|()| status(id)).map_err(|_| StatusCode::Failure),
        }
    }

    async fn realpath(&mut self, id: u32, path: String) -> Result<Name, StatusCode> {
        let resolved = resolve(&path)?.sftp_form();
        Ok(Name {
            id,
            files: vec![File { filename: resolved.clone(), longname: resolved, attrs: FileAttributes::default() }],
        })
    }

    async fn rename(&mut self, id: u32, oldpath: String, newpath: String) -> Result<Status, StatusCode> {
        let (from, to) = (resolve(&oldpath)?, resolve(&newpath)?);
        if self.is_locked(&from) {
            return Err(StatusCode::PermissionDenied);
        }
        self.disk.rename(&from, &to).map(|()| status(id)).map_err(|error| match error {
            crate::disk::DiskError::NotFound { .. } => StatusCode::NoSuchFile,
            _ => StatusCode::Failure,
        })
    }

    async fn extended(&mut self, id: u32, request: String, data: Vec<u8>) -> Result<Packet, StatusCode> {
        if request != "posix-rename@openssh.com" {
            return Err(StatusCode::OpUnsupported);
        }
        let mut offset = 0;
        let (Some(old), Some(new)) = (ssh_string(&data, &mut offset), ssh_string(&data, &mut offset)) else {
            return Err(StatusCode::BadMessage);
        };
        let (from, to) = (resolve(&old)?, resolve(&new)?);
        if self.is_locked(&from) || self.is_locked(&to) {
            return Err(StatusCode::PermissionDenied);
        }
        match self.disk.entry(&to) {
            Some(Entry::File) => self.disk.remove(&to).map_err(|_| StatusCode::Failure)?,
            Some(Entry::Directory) if self.disk.list(&to).is_ok_and(|entries| entries.is_empty()) => {
                self.disk.remove(&to).map_err(|_| StatusCode::Failure)?;
            }
            _ => {}
        }
        self.disk.rename(&from, &to).map_err(|_| StatusCode::Failure)?;
        Ok(Packet::Status(status(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_resolve_like_win32_openssh() {
        assert_eq!(resolve("/C:/k/a.exe").unwrap().to_string(), r"C:\k\a.exe");
        assert_eq!(resolve("C:/k/a.exe").unwrap().to_string(), r"C:\k\a.exe");
        assert_eq!(resolve(r"C:\k\a.exe").unwrap().to_string(), r"C:\k\a.exe");
        assert_eq!(resolve("file.txt").unwrap().to_string(), r"C:\Users\Administrator\file.txt");
        assert_eq!(resolve(".").unwrap().sftp_form(), "/C:/Users/Administrator");
        assert_eq!(resolve("/C:/k/../x").unwrap().to_string(), r"C:\x");
    }
}
