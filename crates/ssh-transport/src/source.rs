//! Reading an upload's source on a helper thread: chunks are read and hashed while the previous chunk is being
//! written over SFTP, so the SFTP pipeline never waits for the disk or for SHA-256.

use std::io::Read;
use std::sync::mpsc;

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

/// Reads `source` in chunks of `chunk_size` bytes on a helper thread, hashing them, while `consume` takes them;
/// returns what `consume` returned and the SHA-256 of everything read.
pub(crate) fn stream<T, E>(
    mut source: Box<dyn Read + Send>,
    chunk_size: usize,
    consume: impl FnOnce(&mut Chunks) -> Result<T, E>,
) -> Result<(T, Sha256Digest), StreamError<E>> {
    std::thread::scope(|scope| {
        let (sender, receiver) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(QUEUED_CHUNKS);
        let reader = scope.spawn(move || {
            let mut hasher = Sha256::new();
            loop {
                let mut chunk = vec![0u8; chunk_size];
                match fill(&mut source, &mut chunk) {
                    Ok(0) => break,
                    Ok(filled) => {
                        chunk.truncate(filled);
                        hasher.update(&chunk);
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
            Sha256Digest::from(<[u8; 32]>::from(hasher.finalize()))
        });
        let mut chunks = Chunks { receiver };
        let consumed = consume(&mut chunks).map_err(StreamError::Consume)?;
        drop(chunks);
        let digest = reader.join().map_err(|_| StreamError::ReaderPanicked)?;
        Ok((consumed, digest))
    })
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
        let result = stream::<_, ()>(Box::new(std::io::Cursor::new(content.clone())), 3000, |chunks| {
            let mut sizes = Vec::new();
            while let Some(chunk) = chunks.next_chunk() {
                sizes.push(chunk.map_err(|_| ())?.len());
            }
            Ok(sizes)
        });
        let Ok((sizes, digest)) = result else { panic!("streaming failed") };
        assert_eq!(sizes, [3000, 3000, 3000, 1000]);
        assert_eq!(digest, Sha256Digest::of_bytes(&content));
    }

    #[test]
    fn a_consumer_that_stops_early_stops_the_reader() {
        let content = vec![0u8; 1 << 20];
        let result = stream::<(), _>(Box::new(std::io::Cursor::new(content)), 1024, |chunks| {
            chunks.next_chunk();
            Err("disk full")
        });
        assert!(matches!(result, Err(StreamError::Consume("disk full"))));
    }
}
