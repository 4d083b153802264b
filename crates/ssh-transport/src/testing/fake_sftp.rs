//! The fake host's SFTP server: an in-memory file system with Win32-OpenSSH's rename semantics (renaming onto an
//! existing file fails) and parent directories that must exist.

use std::collections::HashMap;

use russh_sftp::protocol::{Attrs, Data, File, FileAttributes, Handle, Name, OpenFlags, Status, StatusCode, Version};

use super::state::{SharedState, lock};

/// One SFTP session of the fake host.
pub(crate) struct FakeSftp {
    state: SharedState,
    handles: HashMap<String, String>,
    next_handle: u64,
}

impl FakeSftp {
    pub(crate) fn new(state: SharedState) -> FakeSftp {
        FakeSftp { state, handles: HashMap::new(), next_handle: 0 }
    }

    fn path_of(&self, handle: &str) -> Result<String, StatusCode> {
        self.handles.get(handle).cloned().ok_or(StatusCode::Failure)
    }

    fn parent_exists(&self, path: &str) -> bool {
        match path.rsplit_once('/') {
            None => true,
            Some((parent, _)) if parent.is_empty() || parent.ends_with(':') => true,
            Some((parent, _)) => lock(&self.state).directories.contains(parent),
        }
    }

    fn attributes(&self, path: &str) -> Result<FileAttributes, StatusCode> {
        let state = lock(&self.state);
        if let Some(content) = state.files.get(path) {
            Ok(FileAttributes {
                size: Some(content.len() as u64),
                permissions: Some(0o100_644),
                ..FileAttributes::default()
            })
        } else if state.directories.contains(path) || path.ends_with(':') || path == "/" {
            Ok(FileAttributes { permissions: Some(0o040_755), ..FileAttributes::default() })
        } else {
            Err(StatusCode::NoSuchFile)
        }
    }
}

fn ok(id: u32) -> Status {
    Status { id, status_code: StatusCode::Ok, error_message: "Ok".into(), language_tag: "en-US".into() }
}

impl russh_sftp::server::Handler for FakeSftp {
    type Error = StatusCode;

    fn unimplemented(&self) -> StatusCode {
        StatusCode::OpUnsupported
    }

    async fn init(&mut self, _version: u32, _extensions: HashMap<String, String>) -> Result<Version, StatusCode> {
        Ok(Version::new())
    }

    async fn open(
        &mut self,
        id: u32,
        filename: String,
        flags: OpenFlags,
        _attrs: FileAttributes,
    ) -> Result<Handle, StatusCode> {
        if !self.parent_exists(&filename) {
            return Err(StatusCode::NoSuchFile);
        }
        {
            let mut state = lock(&self.state);
            let exists = state.files.contains_key(&filename);
            if flags.contains(OpenFlags::CREATE) && (!exists || flags.contains(OpenFlags::TRUNCATE)) {
                state.files.insert(filename.clone(), Vec::new());
            } else if !exists {
                return Err(StatusCode::NoSuchFile);
            }
        }
        self.next_handle += 1;
        let handle = self.next_handle.to_string();
        self.handles.insert(handle.clone(), filename);
        Ok(Handle { id, handle })
    }

    async fn close(&mut self, id: u32, handle: String) -> Result<Status, StatusCode> {
        self.handles.remove(&handle);
        Ok(ok(id))
    }

    async fn read(&mut self, id: u32, handle: String, offset: u64, len: u32) -> Result<Data, StatusCode> {
        let path = self.path_of(&handle)?;
        let state = lock(&self.state);
        let content = state.files.get(&path).ok_or(StatusCode::NoSuchFile)?;
        let start = usize::try_from(offset).map_err(|_| StatusCode::Eof)?;
        if start >= content.len() {
            return Err(StatusCode::Eof);
        }
        let end = content.len().min(start + len as usize);
        Ok(Data { id, data: content[start..end].to_vec() })
    }

    async fn write(&mut self, id: u32, handle: String, offset: u64, data: Vec<u8>) -> Result<Status, StatusCode> {
        let path = self.path_of(&handle)?;
        let mut state = lock(&self.state);
        let content = state.files.get_mut(&path).ok_or(StatusCode::NoSuchFile)?;
        let start = usize::try_from(offset).map_err(|_| StatusCode::Failure)?;
        if content.len() < start + data.len() {
            content.resize(start + data.len(), 0);
        }
        content[start..start + data.len()].copy_from_slice(&data);
        Ok(ok(id))
    }

    async fn stat(&mut self, id: u32, path: String) -> Result<Attrs, StatusCode> {
        Ok(Attrs { id, attrs: self.attributes(&path)? })
    }

    async fn lstat(&mut self, id: u32, path: String) -> Result<Attrs, StatusCode> {
        Ok(Attrs { id, attrs: self.attributes(&path)? })
    }

    async fn fstat(&mut self, id: u32, handle: String) -> Result<Attrs, StatusCode> {
        let path = self.path_of(&handle)?;
        Ok(Attrs { id, attrs: self.attributes(&path)? })
    }

    async fn fsetstat(&mut self, id: u32, _handle: String, _attrs: FileAttributes) -> Result<Status, StatusCode> {
        Ok(ok(id))
    }

    async fn setstat(&mut self, id: u32, _path: String, _attrs: FileAttributes) -> Result<Status, StatusCode> {
        Ok(ok(id))
    }

    async fn remove(&mut self, id: u32, filename: String) -> Result<Status, StatusCode> {
        match lock(&self.state).files.remove(&filename) {
            Some(_) => Ok(ok(id)),
            None => Err(StatusCode::NoSuchFile),
        }
    }

    async fn mkdir(&mut self, id: u32, path: String, _attrs: FileAttributes) -> Result<Status, StatusCode> {
        if !self.parent_exists(&path) {
            return Err(StatusCode::NoSuchFile);
        }
        let mut state = lock(&self.state);
        if state.files.contains_key(&path) || !state.directories.insert(path) {
            return Err(StatusCode::Failure);
        }
        Ok(ok(id))
    }

    async fn rmdir(&mut self, id: u32, path: String) -> Result<Status, StatusCode> {
        let mut state = lock(&self.state);
        let prefix = format!("{path}/");
        let occupied = state.files.keys().chain(state.directories.iter()).any(|entry| entry.starts_with(&prefix));
        if occupied {
            return Err(StatusCode::Failure);
        }
        if state.directories.remove(&path) { Ok(ok(id)) } else { Err(StatusCode::NoSuchFile) }
    }

    async fn rename(&mut self, id: u32, oldpath: String, newpath: String) -> Result<Status, StatusCode> {
        let mut state = lock(&self.state);
        // Win32-OpenSSH's plain rename links first, so an existing target fails.
        if state.files.contains_key(&newpath) || state.directories.contains(&newpath) {
            return Err(StatusCode::Failure);
        }
        let content = state.files.remove(&oldpath).ok_or(StatusCode::NoSuchFile)?;
        state.files.insert(newpath, content);
        Ok(ok(id))
    }

    async fn realpath(&mut self, id: u32, path: String) -> Result<Name, StatusCode> {
        Ok(Name { id, files: vec![File { filename: path.clone(), longname: path, attrs: FileAttributes::default() }] })
    }
}
