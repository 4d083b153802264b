//! A TCP proxy a test can cut: it forwards every connection accepted on a loopback port to one upstream address
//! (an operator replica's path to the API server), until [`TcpProxy::cut`] closes the listening socket and every
//! forwarded connection at once. After the cut, connections to its port are refused and a client's established
//! connections (a kube client's watches and its pooled HTTP/2 connection) end, as when a node loses its route to the
//! API server.

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use crate::SandboxError;

/// A running proxy (cut when dropped).
#[derive(Debug)]
pub struct TcpProxy {
    address: SocketAddr,
    forwarding: JoinHandle<()>,
}

impl TcpProxy {
    /// Listens on a free loopback port and forwards each connection to `upstream`.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), wmco_sandbox::SandboxError> {
    /// let proxy = wmco_sandbox::tcp_proxy::TcpProxy::start("127.0.0.1:6443".parse().unwrap()).await?;
    /// println!("talk to {} instead", proxy.address());
    /// proxy.cut();
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`SandboxError::Io`] if no loopback port can be bound.
    pub async fn start(upstream: SocketAddr) -> Result<TcpProxy, SandboxError> {
        let listener =
            TcpListener::bind("127.0.0.1:0").await.map_err(SandboxError::io("bind a proxy on", "127.0.0.1"))?;
        let address = listener.local_addr().map_err(SandboxError::io("read the address of a proxy on", "127.0.0.1"))?;
        let forwarding = tokio::spawn(forward(listener, upstream));
        Ok(TcpProxy { address, forwarding })
    }

    /// Where clients connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Closes the listening socket and every forwarded connection.
    pub fn cut(&self) {
        self.forwarding.abort();
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
    }
}

/// Accepts connections and forwards each in a task of its own; aborting this task drops the listener and the
/// [`JoinSet`], which aborts every forwarding task.
async fn forward(listener: TcpListener, upstream: SocketAddr) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    connections.spawn(forward_one(client, upstream));
                }
                Err(error) => eprintln!("proxy to {upstream}: accept failed: {error}"),
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn forward_one(mut client: TcpStream, upstream: SocketAddr) {
    match TcpStream::connect(upstream).await {
        Ok(mut server) => {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        }
        Err(error) => eprintln!("proxy to {upstream}: connect failed: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let (mut reader, mut writer) = stream.split();
                    let _ = tokio::io::copy(&mut reader, &mut writer).await;
                });
            }
        });
        address
    }

    #[tokio::test]
    async fn it_forwards_until_cut_then_ends_open_connections_and_refuses_new_ones() {
        let proxy = TcpProxy::start(echo_server().await).await.unwrap();
        let mut open = TcpStream::connect(proxy.address()).await.unwrap();
        open.write_all(b"ping").await.unwrap();
        let mut echoed = [0u8; 4];
        open.read_exact(&mut echoed).await.unwrap();
        assert_eq!(&echoed, b"ping");

        proxy.cut();
        let mut rest = Vec::new();
        let ended = tokio::time::timeout(std::time::Duration::from_secs(10), open.read_to_end(&mut rest)).await;
        assert!(matches!(ended, Ok(Ok(0)) | Ok(Err(_))), "the open connection ends: {ended:?}");
        let refused = async {
            // The listener closes once the aborted task is dropped: retry briefly.
            for _ in 0..100 {
                if TcpStream::connect(proxy.address()).await.is_err() {
                    return true;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            false
        };
        assert!(refused.await, "new connections are refused");
    }
}
