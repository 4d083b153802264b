//! Running one command on a blocking connection: exec, EOF on stdin at once, stdout and stderr drained together
//! (so neither can fill and stall the other), the full 32-bit exit status, and a deadline for the whole command.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use ssh2::{BlockDirections, Channel};

use crate::command::{Output, RemoteCommand};
use crate::connection::{Connection, Failure, OpError, classify, millis};
use crate::error::TransportError;

/// The exit code reported when the server says the command died from a signal (as the OpenSSH client does).
const KILLED_BY_SIGNAL: u32 = 255;
/// The longest single wait for socket readiness, so a missed wake-up costs at most this.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// Runs `command` on `connection`, enforcing `command.timeout` from exec to close.
pub(crate) fn run(connection: &Connection, command: &RemoteCommand, host: &str) -> Result<Output, OpError> {
    let result = run_until_deadline(connection, command, host);
    connection.session.set_timeout(connection.io_timeout_ms);
    result
}

fn run_until_deadline(connection: &Connection, command: &RemoteCommand, host: &str) -> Result<Output, OpError> {
    let started = Instant::now();
    let deadline = started + command.timeout;
    let session = &connection.session;
    let fail = |error: ssh2::Error, during: &str| library_failure(error, during, host, command);

    session.set_timeout(millis(remaining(deadline)));
    let mut channel = session.channel_session().map_err(|error| fail(error, "opening a channel"))?;
    channel.exec(&command.line).map_err(|error| fail(error, "starting the command"))?;
    channel.send_eof().map_err(|error| fail(error, "closing the command's input"))?;

    session.set_blocking(false);
    let drained = drain(connection, &mut channel, deadline);
    session.set_blocking(true);
    let (stdout, stderr) = match drained {
        Ok(streams) => streams,
        Err(DrainError::Deadline) => return Err(timed_out(host, command)),
        Err(DrainError::TooLarge) => {
            return Err(OpError {
                error: TransportError::OutputTooLarge {
                    host: host.to_owned(),
                    command: command.summary(),
                    limit: connection.max_output_bytes,
                },
                poisoned: true,
            });
        }
        Err(DrainError::Io(error)) => {
            return Err(OpError {
                error: TransportError::Unreachable {
                    host: host.to_owned(),
                    during: "reading the command's output".into(),
                    reason: error.to_string(),
                },
                poisoned: true,
            });
        }
    };

    session.set_timeout(millis(remaining(deadline)));
    channel.wait_close().map_err(|error| fail(error, "waiting for the command to exit"))?;
    let exit_code = exit_code(&channel).map_err(|error| fail(error, "reading the exit status"))?;
    Ok(Output { exit_code, stdout, stderr, duration: started.elapsed() })
}

fn exit_code(channel: &Channel) -> Result<u32, ssh2::Error> {
    let signal = channel.exit_signal()?;
    if signal.exit_signal.is_some() {
        return Ok(KILLED_BY_SIGNAL);
    }
    // libssh2 keeps the wire uint32 in a C int; reinterpreting the bits restores codes above i32::MAX.
    Ok(u32::from_ne_bytes(channel.exit_status()?.to_ne_bytes()))
}

enum DrainError {
    Deadline,
    TooLarge,
    Io(std::io::Error),
}

/// Reads stdout and stderr in non-blocking mode until the server's EOF, or until together they pass the
/// connection's output cap.
fn drain(connection: &Connection, channel: &mut Channel, deadline: Instant) -> Result<(Vec<u8>, Vec<u8>), DrainError> {
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let cap = connection.max_output_bytes;
        let stdout_read = read_available(channel, &mut buffer, &mut stdout, cap.saturating_sub(stderr.len()))?;
        let mut stderr_stream = channel.stderr();
        let stderr_read =
            read_available(&mut stderr_stream, &mut buffer, &mut stderr, cap.saturating_sub(stdout.len()))?;
        if stdout.len() + stderr.len() > cap {
            return Err(DrainError::TooLarge);
        }
        if stdout_read || stderr_read {
            if remaining(deadline).is_zero() {
                return Err(DrainError::Deadline);
            }
            continue;
        }
        if channel.eof() {
            return Ok((stdout, stderr));
        }
        let left = remaining(deadline);
        if left.is_zero() {
            return Err(DrainError::Deadline);
        }
        wait_for_socket(connection, left.min(MAX_WAIT)).map_err(DrainError::Io)?;
    }
}

/// Appends whatever `stream` has now to `sink`, stopping once `sink` holds more than `cap` bytes; true when
/// something was read.
fn read_available(
    stream: &mut impl Read,
    buffer: &mut [u8],
    sink: &mut Vec<u8>,
    cap: usize,
) -> Result<bool, DrainError> {
    let mut read_any = false;
    while sink.len() <= cap {
        match stream.read(buffer) {
            Ok(0) => return Ok(read_any),
            Ok(count) => {
                sink.extend_from_slice(&buffer[..count]);
                read_any = true;
            }
            Err(error) if error.kind() == ErrorKind::WouldBlock => return Ok(read_any),
            Err(error) => return Err(DrainError::Io(error)),
        }
    }
    Ok(read_any)
}

/// Waits until the socket is ready in the direction libssh2 is blocked on, or `limit` passes.
fn wait_for_socket(connection: &Connection, limit: Duration) -> std::io::Result<()> {
    let flags = match connection.session.block_directions() {
        BlockDirections::Outbound => PollFlags::OUT,
        BlockDirections::Both => PollFlags::IN | PollFlags::OUT,
        BlockDirections::Inbound | BlockDirections::None => PollFlags::IN,
    };
    let mut fds = [PollFd::new(&connection.socket, flags)];
    let timeout = Timespec::try_from(limit).map_err(std::io::Error::other)?;
    match poll(&mut fds, Some(&timeout)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

fn timed_out(host: &str, command: &RemoteCommand) -> OpError {
    OpError {
        error: TransportError::TimedOut {
            host: host.to_owned(),
            during: format!("running `{}`", command.summary()),
            after: command.timeout,
        },
        poisoned: true,
    }
}

fn library_failure(error: ssh2::Error, during: &str, host: &str, command: &RemoteCommand) -> OpError {
    match classify(&error) {
        Failure::TimedOut => timed_out(host, command),
        Failure::ConnectionLost => OpError {
            error: TransportError::Unreachable {
                host: host.to_owned(),
                during: during.to_owned(),
                reason: error.message().to_owned(),
            },
            poisoned: true,
        },
        Failure::Other => OpError {
            error: TransportError::Protocol {
                host: host.to_owned(),
                during: during.to_owned(),
                reason: error.message().to_owned(),
            },
            poisoned: true,
        },
    }
}
