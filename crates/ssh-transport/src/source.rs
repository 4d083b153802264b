//! Reading an upload's source on a helper thread: chunks are read and hashed while the previous chunk is being
//! written over SFTP, so the SFTP pipeline never waits for the disk or for SHA-256. A local file is hashed once per
//! process, not once per host: once a file's bytes matched their expected digest, later uploads of the same file
//! (same path, size, modification time and, on Unix, device and inode) skip the hash ([`verified`],
//! [`note_verified`]); the host's own hash check of every uploaded file still runs.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError, mpsc};
use std::time::SystemTime;

use sha2::{Digest as _, Sha256};

use wmco_vocabulary::Sha256Digest;

/// How many read chunks may wait for the writer.
const QUEUED_CHUNKS: usize = 2;

/// Why streaming stopped.
pub(crate) enum StreamError<E> {
    /// The reader thread died.
    ReaderPanicked,
    /// The consumer failed (including on a read error it was handed).
    Consume(E),
}

/// The chunks read so far, in order; a read error ends the sequence.
pub(crate) struct Chunks {
    receiver: mpsc::Receiver<std::io::Result<Vec<u8>>>,
}

impl Chunks {
    /// The next chunk, waiting for the reader; `None` at the end of the source.
    pub(crate) fn next_chunk(&mut self) -> Option<std::io::Result<Vec<u8>>> {
        self.receiver.recv().ok()
    }
}

/// Reads `source` in chunks of `chunk_size` bytes on a helper thread, hashing them unless `hash` is false, while
/// `consume` takes them; returns what `consume` returned and the SHA-256 of everything read (if hashed).
pub(crate) fn stream<T, E>(
    mut source: Box<dyn Read + Send>,
    chunk_size: usize,
    hash: bool,
    consume: impl FnOnce(&mut Chunks) -> Result<T, E>,
) -> Result<(T, Option<Sha256Digest>), StreamError<E>> {
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(QUEUED_CHUNKS);
        let reader = scope.spawn(move || {
            let mut hasher = hash.then(Sha256::new);
            loop {
                let mut chunk = vec![0u8; chunk_size];
                match fill(&mut source, &mut chunk) {
                    Ok(0) => break,
                    Ok(filled) => {
                        chunk.truncate(filled);
                        if let Some(hasher) = hasher.as_mut() {
                            hasher.update(&chunk);
                        }
                        if sender.send(Ok(chunk)).is_err() {
                            break;
                        }
                    }
                    Err(error) => {
                        let _ = sender.send(Err(error));
                        break;
                    }
                }
            }
            hasher.map(|hasher| Sha256Digest::from(<[u8; 32]>::from(hasher.finalize())))
        });
        let mut chunks = Chunks { receiver };
        let consumed = consume(&mut chunks).map_err(StreamError::Consume)?;
        drop(chunks);
        let digest = reader.join().map_err(|_| StreamError::ReaderPanicked)?;
        Ok((consumed, digest))
    })
}

/// What identifies one version of a local file without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    device_and_inode: Option<(u64, u64)>,
}

impl FileStamp {
    /// The stamp of an open file.
    pub(crate) fn of(file: &std::fs::File) -> std::io::Result<FileStamp> {
        let metadata = file.metadata()?;
        #[cfg(unix)]
        let device_and_inode = {
            use std::os::unix::fs::MetadataExt as _;
            Some((metadata.dev(), metadata.ino()))
        };
        #[cfg(not(unix))]
        let device_and_inode = None;
        Ok(FileStamp { len: metadata.len(), modified: metadata.modified().ok(), device_and_inode })
    }
}

/// Per local file: the stamp and digest it was last verified with, and how many times it was hashed.
#[derive(Clone, Copy)]
struct Verified {
    stamp: FileStamp,
    digest: Sha256Digest,
    hashes: u32,
}

fn verified_files() -> &'static Mutex<HashMap<PathBuf, Verified>> {
    static VERIFIED: OnceLock<Mutex<HashMap<PathBuf, Verified>>> = OnceLock::new();
    VERIFIED.get_or_init(Mutex::default)
}

/// Whether the file at `path`, as `stamp` describes it, was already found to hold `expected`.
pub(crate) fn verified(path: &Path, stamp: FileStamp, expected: Sha256Digest) -> bool {
    let files = verified_files().lock().unwrap_or_else(PoisonError::into_inner);
    files.get(path).is_some_and(|verified| verified.stamp == stamp && verified.digest == expected)
}

/// Notes that the file at `path` was hashed (as `stamp` describes it) and found to hold `digest`.
pub(crate) fn note_verified(path: &Path, stamp: FileStamp, digest: Sha256Digest) {
    let mut files = verified_files().lock().unwrap_or_else(PoisonError::into_inner);
    let hashes = files.get(path).map_or(0, |verified| verified.hashes) + 1;
    files.insert(path.to_path_buf(), Verified { stamp, digest, hashes });
}

/// How many times this process hashed the local file at `path` to upload it and found the expected digest: once
/// per version of the file, whatever the number of hosts it went to.
///
/// ```
/// assert_eq!(wmco_ssh_transport::source_hashes(std::path::Path::new("/nonexistent")), 0);
/// ```
pub fn source_hashes(path: &Path) -> u32 {
    let files = verified_files().lock().unwrap_or_else(PoisonError::into_inner);
    files.get(path).map_or(0, |verified| verified.hashes)
}

/// Reads until `buffer` is full or the source ends; returns the bytes read.
fn fill(source: &mut dyn Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match source.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(count) => filled += count,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_arrive_in_order_with_the_hash_of_everything() {
        let content: Vec<u8> = (0..10_000u32).map(|value| (value % 251) as u8).collect();
        let result = stream::<_, ()>(Box::new(std::io::Cursor::new(content.clone())), 3000, true, |chunks| {
            let mut sizes = Vec::new();
            while let Some(chunk) = chunks.next_chunk() {
                sizes.push(chunk.map_err(|_| ())?.len());
            }
            Ok(sizes)
        });
        let Ok((sizes, digest)) = result else { panic!("streaming failed") };
        assert_eq!(sizes, [3000, 3000, 3000, 1000]);
        assert_eq!(digest, Some(Sha256Digest::of_bytes(&content)));
    }

    #[test]
    fn a_consumer_that_stops_early_stops_the_reader() {
        let content = vec![0u8; 1 << 20];
        let result = stream::<(), _>(Box::new(std::io::Cursor::new(content)), 1024, true, |chunks| {
            chunks.next_chunk();
            Err("disk full")
        });
        assert!(matches!(result, Err(StreamError::Consume("disk full"))));
    }
}
